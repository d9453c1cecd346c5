module repro.local/faas-functions

go 1.19
