# Front door.  `make demo` is tally's main job on this machine; `make test` is what CI runs.
# Both install missing Debian packages first (as root) and build with CMake.
.PHONY: all build demo test bench clean dist deb

all: build

build:
	scripts/install-deps.sh build
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$$(nproc)

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# The relocatable bundle: tally-VERSION-linux-x86_64.tar.gz here.  WITH_CUPTI=1 puts the
# toolkit's libcupti (and its licence) in it, for images that have none.
dist: build
	scripts/dist.sh build . $(if $(WITH_CUPTI),--with-cupti)

# The Debian package: tally_VERSION_ARCH.deb here (apt-get install ./tally_*.deb).
deb: build
	cpack -G DEB -B $(CURDIR)/build/deb --config build/CPackConfig.cmake
	cp build/deb/tally_*.deb .

bench: build
	bench/run-cpu.sh build

clean:
	rm -rf build build-asan build-tsan build-fuzz
