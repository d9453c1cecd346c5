# Paper 004, Section 2.4.2: Montage and BLAST workflows (see systems/mtc-workflows/).
