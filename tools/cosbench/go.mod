module repro/tools/cosbench

go 1.19
