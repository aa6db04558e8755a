mesh 1f1b = 1
