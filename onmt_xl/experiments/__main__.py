import sys

from onmt_xl.experiments.cli import main

sys.exit(main())
