"""Default values shared by the estimators, the command line and the solvers: each is written here once."""

C = 1000.0          # svm_perf's default trade-off (svm_perf_learn -c)
TOL = 0.01          # precision of the slack in percent (svm_perf_learn -e; svm_perf's own default is 0.1)
MAX_ITER = 2000     # cutting planes in all
MAX_OUTER = 30      # feature groups generated with a budget
BIAS = 1.0          # value of the constant feature (svm_perf_learn --b)
MASTER_SOLVER = "ipm"
BLAS_THREADS = 1    # per fit: threads only spin on the small master algebra and fight other processes
