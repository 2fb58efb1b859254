"""Builds the extension hfstatic._hfstatic with the project's CMake (pyproject.toml has the rest).

The CMake build folder is build-python/ (HFSTATIC_PIP_BUILD_DIR overrides it); it is kept, so a
second install only relinks. CMAKE_CXX_COMPILER_LAUNCHER=ccache in the environment is honoured.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """Configures the project without its tests and benchmarks and builds only the extension."""

    def build_extension(self, ext):
        build_dir = os.environ.get("HFSTATIC_PIP_BUILD_DIR", os.path.join(ROOT, "build-python"))
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DHFSTATIC_BUILD_TESTS=OFF",
                     "-DHFSTATIC_BUILD_BENCH=OFF", "-DHFSTATIC_PYTHON=ON", "-DPython3_EXECUTABLE=" + sys.executable]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            configure += ["-G", "Ninja"]
        subprocess.run(configure, check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", build_dir, "--target", "hfstatic_python", "-j", jobs], check=True)
        built = glob.glob(os.path.join(build_dir, "python", "hfstatic", "_hfstatic*.so"))
        if not built:
            sys.exit("the CMake build made no extension: are python3-dev and pybind11-dev installed?")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    ext_modules=[Extension("hfstatic._hfstatic", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build-python", "setuptools")}},
)
