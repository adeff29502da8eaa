import sys

from gpu_pool.cli.main import main

sys.exit(main())
