import sys

from gpu_pool.cli import main

sys.exit(main())
