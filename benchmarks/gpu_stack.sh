#!/bin/sh
# The app's own measurement path on the lent GPU machine, in one command (benchmarks/gpu_stack.py
# says what it does and writes). That machine has Python 3.12, CuPy, PyTorch and CUDA's nvcc but
# not the web stack, and reaches no registry: everything else travels with the working tree.
#
# Here, once (downloads the web stack's wheels into .whl/ and Redis's Debian packages into
# .deb/, both ignored by git; about 30 MB together):
#
#     benchmarks/gpu_stack.sh prepare
#
# There, with the device tool, carrying both folders:
#
#     run(command="PYTHONUNBUFFERED=1 benchmarks/gpu_stack.sh $OUT/stack --device h200",
#         carry=[".whl", ".deb"], timeout_s=420)
#
# which installs the wheels into /tmp/site, unpacks Redis into /tmp/debs (never into /), points
# the compiler at the machine's CUDA toolkit, and runs benchmarks/gpu_stack.py with the options
# after the folder. Anywhere with redis-server and the .venv (CI, a developer's machine),
# `.venv/bin/python benchmarks/gpu_stack.py --out DIR --emulated` rehearses the same path
# without a GPU.
set -eu
cd "$(dirname "$0")/.."

# The web stack's packages the GPU image lacks (requirements.txt's web part and what it needs);
# gpu_wheels.sh takes each at requirements.txt's pin, else at the version .venv holds.
STACK_PACKAGES="Django asgiref sqlparse celery kombu billiard vine amqp click click-didyoumean
click-repl click-plugins prompt_toolkit wcwidth python-dateutil tzlocal redis django-axes gunicorn
whitenoise brotli django-ninja pydantic pydantic_core annotated-types typing-inspection
typing_extensions drf-spectacular-sidecar python-json-logger"
# Redis's server and the libraries of it the GPU image lacks (Debian 12's build needs glibc 2.34;
# the image has 2.39).
REDIS_PACKAGES="redis-server redis-tools libjemalloc2 liblzf1"

if [ "${1:-}" = prepare ]; then
    # shellcheck disable=SC2086 # one word per package
    benchmarks/gpu_wheels.sh $STACK_PACKAGES
    mkdir -p .deb
    # shellcheck disable=SC2086
    (cd .deb && apt-get download $REDIS_PACKAGES)
    # Plain names (PACKAGE.deb): apt's carry an epoch's escaped colon and a tilde.
    for package in .deb/*_*.deb; do
        mv "$package" ".deb/$(basename "$package" | cut -d _ -f 1).deb"
    done
    exit 0
fi
if [ $# -eq 0 ]; then
    echo "usage: benchmarks/gpu_stack.sh prepare | OUT [gpu_stack.py options]" >&2
    exit 2
fi
out=$1
shift

for package in .deb/*.deb; do
    dpkg -x "$package" /tmp/debs
done
export PATH="/tmp/debs/usr/bin:$PATH"
export LD_LIBRARY_PATH="/tmp/debs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
# The compile worker builds with the machine's toolkit (requirements.txt's nvcc wheel is not
# carried): compiler/toolchain/locate.py reads this.
if [ -z "${FUSION_EXPLORER_CUDA_ROOT:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    export FUSION_EXPLORER_CUDA_ROOT=/usr/local/cuda
fi
exec python3 benchmarks/gpu_stack.py --out "$out" "$@"
