module repro.local/faas-standin

go 1.19

require repro.local/faas-functions v0.0.0

replace repro.local/faas-functions => ../faas-functions/go
