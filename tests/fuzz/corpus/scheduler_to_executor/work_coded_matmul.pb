b/
-"coded_matmul*tcmm1 0 2 2 1 2 3 4 2 1 1