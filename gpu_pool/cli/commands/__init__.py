"""The `gpu-pool` verbs whose glue has its own module, one per verb (`run(args, ...)`); main.py
parses the arguments and dispatches."""
