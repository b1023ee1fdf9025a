# Front door.  `make demo` is tally's main job on this machine; `make test` is what CI runs.
# Both install missing Debian packages first (as root) and build with CMake.
.PHONY: all build demo test bench clean

all: build

build:
	scripts/install-deps.sh
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$$(nproc)

demo:
	scripts/demo.sh

test:
	scripts/test.sh

bench: build
	bench/run-cpu.sh build

clean:
	rm -rf build build-asan build-tsan build-fuzz
