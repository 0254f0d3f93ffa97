"""`python -m pyspark_catalog_ext.cli`."""

import sys

from pyspark_catalog_ext.cli import main

sys.exit(main())
