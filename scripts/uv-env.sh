# Sourced by setup.sh and setup-studio.sh: how uv installs fieldguide's environments.
#
# Hard links from uv's cache (the default cache folder, ~/.cache/uv, or UV_CACHE_DIR): .venv and
# .venv-studio then share one copy of every wheel on disk, torch's included (uv copies instead,
# with a warning, where the cache is on another file system).
export UV_LINK_MODE="${UV_LINK_MODE:-hardlink}"
# llama-cpp-python compiles llama.cpp from source on a fresh machine (there is no Linux wheel on
# PyPI). Left alone it compiles for the build machine's own CPU (GGML_NATIVE): on a CPU that lists
# AMX but traps on it, the library then dies with SIGILL, and a wheel or image built on one machine
# can die on another. fieldguide builds one portable variant instead: x86-64 with AVX2, FMA, F16C
# and BMI2, which every x86-64 CPU since 2013-2015 runs. (ggml's run-time dispatch over all CPU
# variants compiles the CPU backend eight times, and would pick its AMX variant on exactly such a
# CPU.) fieldguide runs text models only, so the multimodal library (mtmd) is left out.
# FIELDGUIDE_LLAMA_CMAKE_ARGS replaces these flags (e.g. for another architecture).
LLAMA_PORTABLE_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
LLAMA_PORTABLE_FLAGS="$LLAMA_PORTABLE_FLAGS -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
export CMAKE_ARGS="${FIELDGUIDE_LLAMA_CMAKE_ARGS:-$LLAMA_PORTABLE_FLAGS} -DLLAVA_BUILD=OFF"
# Every core compiles (a Makefile generator builds one file at a time unless told).
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
# Built wheels are kept per requirement and flags, outside the checkout, so another clone on the
# same machine (CI's, say) installs the same file instead of compiling again.
FIELDGUIDE_BUILD_CACHE="${FIELDGUIDE_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fieldguide}"

# The requirement pyproject.toml states for a package, e.g. `pyproject_requirement torch`.
# Extras are dropped: `pyproject_requirement llama-cpp-python` gives `llama-cpp-python==0.3.36`.
pyproject_requirement() {
  grep -o "\"$1\(\[[a-z,]*\]\)\?[=<>!~ ][^\"]*\"" pyproject.toml | head -1 | tr -d '"' | sed 's/\[[a-z,]*\]//'
}

# llama-cpp-python has no Linux wheel on PyPI. It is compiled once, into the build cache (one
# folder per requirement and flags), and both environments install that file: uv would otherwise
# compile it again for .venv-studio, as it does not keep a wheel built from a downloaded source
# archive across runs. Prints the wheel's path; $1 is the Python 3.11+ the environments are made from.
# pip runs from an environment of its own (build/wheel-builder, pip alone): pip reads the
# packages of the environment it runs in, and setup.sh installs into .venv meanwhile, so .venv's
# pip could read a package uv was still writing and stop on its missing version. pip's own wheel
# cache is not used (--no-cache-dir): it keys a built wheel by the source archive alone, so it
# would hand back a wheel compiled with other flags.
llama_cpp_wheel() {
  local requirement dir builder=build/wheel-builder
  requirement=$(pyproject_requirement llama-cpp-python)
  dir="$FIELDGUIDE_BUILD_CACHE/wheels/$(printf '%s %s' "$requirement" "$CMAKE_ARGS" | sha256sum | cut -c1-12)"
  if ! ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    [ -x "$builder/bin/python" ] || "$1" -m venv "$builder" >&2
    "$builder/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-cache-dir --no-deps --wheel-dir "$dir" \
      "$requirement" >&2
  fi
  ls -t "$dir"/llama_cpp_python-*.whl | head -1
}
