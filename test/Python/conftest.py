# Runs the tests against the package source in python/ and the libraries in
# $EFFOPT_BUILD_DIR (default: build/ of this tree).
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("EFFOPT_BUILD_DIR", os.path.join(ROOT, "build"))
