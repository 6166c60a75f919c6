"""Installs the effopt package and records where effopt's build is.

    pip install --no-build-isolation ./python

The shared libraries (libeffopt-compiler.so, libeffrt.so) stay in the build
directory: $EFFOPT_BUILD_DIR at install time, else build/ next to python/.
Its path is written into effopt/_build_dir.py; $EFFOPT_BUILD_DIR at run time
still wins.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPy(build_py):
    def run(self):
        super().run()
        build_dir = os.path.abspath(os.environ.get(
            "EFFOPT_BUILD_DIR", os.path.join(HERE, "..", "build")))
        target = os.path.join(self.build_lib, "effopt", "_build_dir.py")
        with open(target, "w") as f:
            f.write(f"BUILD_DIR = {build_dir!r}\n")


setup(cmdclass={"build_py": BuildPy})
