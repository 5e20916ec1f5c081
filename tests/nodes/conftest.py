import sys
from pathlib import Path

# `fakes` is shared by tests/nodes and tests/graph.
sys.path.insert(0, str(Path(__file__).parent))
