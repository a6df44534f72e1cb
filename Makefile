# dmm - a memory allocator evolved for each program.
#
#   make              build build/libdmmtrace.so and build/dmm
#   make test         the layout check, every Criterion test, short fuzz runs,
#                     then the sanitizers (test/test.mk)
#   make unit         unit tests only; make integration, make stress the others
#   make check        every Criterion test (unit, integration, stress)
#   make check-sanitize  those tests under ASan + UBSan, then check-tsan
#   make check-tsan   both libraries' multi-threaded work under ThreadSanitizer
#   make fuzz         long libFuzzer runs of every reader (FUZZ_SECONDS=)
#   make bench        benchmarks side by side, then build/bench/report.md (dmm report)
#   make evolve       an allocator evolved for TRACE= (or the bundled workload)
#   make demo         trace the bundled workload and print its statistics
#   make tune-glibc   glibc malloc tunables for TRACE= (or the bundled workload)
#   make install      PREFIX=/usr/local DESTDIR=  (make uninstall: the same)
#   make deb          a Debian package; make deb-check installs it in a chroot
#   make clean

# Build on every CPU unless told otherwise (make -jN).  A make that a
# recipe runs with $(MAKE) under a parallel make shares its parent's jobs
# instead: the -j it was passed shows in the environment's MAKEFLAGS, not
# yet in the variable while the makefile is read, and adding one would
# make it leave the jobserver, with a warning.
ifeq ($(filter -j%,$(MAKEFLAGS) $(shell printenv MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

# The release; `dmm --version` adds the git revision when built from a
# checkout (not from a tarball or the Debian source tree).
VERSION  := 0.9.0
GIT_REV  := $(if $(wildcard .git),$(shell git describe --always --dirty --abbrev=12 2>/dev/null))

CC       ?= gcc
FUZZCC   ?= clang
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    ?= build
O        := $(BUILD)

# The flags, each set once.  BASE_FLAGS: what every compilation of the
# project's C needs (the tools, the libraries, fuzzing, TSan); includes are
# named from the root (scripts/layers.txt says which way they may point).
CFLAGS   ?= -O2 -g
WARN       := -Wall -Wextra -Werror
BASE_FLAGS := $(WARN) -std=gnu11 -D_GNU_SOURCE -I.
# Flags the code needs whatever CFLAGS a user (or check-sanitize) gives.
DMM_CFLAGS := $(BASE_FLAGS) -fPIC
# Programs that tests run under the preload libraries are never sanitized:
# a sanitizer runtime must come first in the library list.
PROG_CFLAGS := -O2 -g $(DMM_CFLAGS)
# Code that is the malloc family, or is called from it.
NO_MALLOC_BUILTINS := -fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc \
                      -fno-builtin-realloc
# The preload libraries: hidden internals, initial-exec TLS, whole-program
# optimisation across the shim, its back end and the allocator classes, and
# calls into glibc through the GOT (they link -z now: a PLT stub would only
# add a jump to each, one per traced malloc and free).
PRELOAD_CFLAGS := -O2 -g -flto=auto $(DMM_CFLAGS) -fvisibility=hidden -ftls-model=initial-exec -fno-plt \
                  $(NO_MALLOC_BUILTINS)
LDLIBS_CORE := -lzstd -lm

# The modules of the dmm tool, in one archive; codegen/cli/dmm.c holds main.
# preload/ belongs to the preload libraries only.
CORE_SRC := $(wildcard tracer/*/*.c allocators/*/*.c) \
            $(filter-out codegen/cli/dmm.c codegen/search/mpi_plugin.c,$(wildcard codegen/*/*.c))
CORE_OBJ := $(CORE_SRC:%.c=$(O)/obj/%.o)

TRACE_SO_SRC := preload/recorder/trace_shim.c preload/common/options.c preload/recorder/recorder.c \
                preload/recorder/block.c preload/recorder/writer.c preload/recorder/optlib.c \
                preload/recorder/resident.c preload/recorder/fds.c \
                tracer/format/crc32.c
TRACE_SO_OBJ := $(TRACE_SO_SRC:%.c=$(O)/pic/%.o)
# libdmm.so: the allocator classes and the chain, without the simulator (and
# the error type they report with).
ALLOC_SRC    := tracer/base/err.c \
                $(wildcard allocators/core/*.c allocators/classes/*.c allocators/chain/*.c)
# The malloc family both DMM libraries share; each adds its back end.
SHIM_SRC     := preload/shim/shim.c preload/shim/check.c preload/shim/offload.c
DMM_SO_SRC   := $(SHIM_SRC) preload/shim/backend_chain.c preload/common/options.c $(ALLOC_SRC)
DMM_SO_OBJ   := $(DMM_SO_SRC:%.c=$(O)/pic/%.o)

BENCH_PROGS := $(patsubst bench/%.c,$(O)/bench/%,$(wildcard bench/work_*.c))
# bench/lib*.c: preload libraries the benchmarks run programs under
BENCH_LIBS  := $(patsubst bench/%.c,$(O)/bench/%.so,$(wildcard bench/lib*.c))


.PHONY: all bench compare demo install uninstall deb deb-check clean deps evolve tune-glibc FORCE
# dmm evolve --mpi opens libdmm_mpi.so: built where Open MPI's mpicc is.
MPICC  ?= mpicc
MPI_SO := $(if $(shell command -v $(MPICC) 2>/dev/null),$(O)/libdmm_mpi.so)

all: $(O)/libdmmtrace.so $(O)/libdmm.so $(O)/libdmm_evolved.so $(O)/dmm $(O)/dmm-build.txt \
     $(BENCH_PROGS) $(BENCH_LIBS) $(MPI_SO)

# Every build first makes sure the Debian packages are there (fast when they
# are; installs them as root, else prints the apt-get command and stops):
# what the build needs when only building and installing is asked for
# (make, make install, a file of build/), everything the tests, benchmarks
# and make evolve use otherwise.  (DEPS=true: the caller vouches for them,
# as a Debian package build does.)
DEPS ?= scripts/deps.sh
DEPS_SET := $(if $(filter-out all install uninstall clean $(O)/%,$(or $(MAKECMDGOALS),all)),,--build)
deps:
	@$(DEPS) $(DEPS_SET)

$(O)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DMM_CFLAGS) -MMD -MP -c $< -o $@

# The preload libraries' objects (their code must never call malloc); linked
# with no lazy binding.
$(O)/pic/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -MMD -MP -c $< -o $@

$(O)/libdmmtrace.so: $(TRACE_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -Wl,-soname,$(@F) -o $@ $^ -ldl -lpthread

$(O)/libdmm.so: $(DMM_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -Wl,-soname,$(@F) -o $@ $^ -ldl -lpthread

# libdmm_evolved.so: the chain of EVOLVED_DMM as C source (dmm codegen), its
# back end (preload/shim/backend_evolved.c), the shim of libdmm.so, and the
# allocator classes built again without cost counting (DMM_COUNT=0).
# `make evolve` sets EVOLVED_DMM to the search's best.dmm.
EVOLVED_DMM ?= codegen/default.dmm
EVOLVED_OBJ := $(O)/evolved/dmm_evolved.o $(O)/pic-nocount/preload/shim/backend_evolved.o \
               $(SHIM_SRC:%.c=$(O)/pic/%.o) $(O)/pic/preload/common/options.o \
               $(patsubst %.c,$(O)/pic-nocount/%.o,$(ALLOC_SRC))

# Which .dmm the generated source came from: regenerate when it changes.
$(O)/evolved/source.path: FORCE
	@mkdir -p $(dir $@)
	@echo '$(EVOLVED_DMM)' | cmp -s - $@ || echo '$(EVOLVED_DMM)' > $@
FORCE:

$(O)/evolved/dmm_evolved.c: $(EVOLVED_DMM) $(O)/evolved/source.path $(O)/dmm
	$(O)/dmm codegen -o $@ $(EVOLVED_DMM)
	cp $(EVOLVED_DMM) $(O)/evolved/source.dmm

$(O)/evolved/dmm_evolved.o: $(O)/evolved/dmm_evolved.c | deps
	$(CC) $(PRELOAD_CFLAGS) -DDMM_COUNT=0 -MMD -MP -c $< -o $@

$(O)/pic-nocount/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -DDMM_COUNT=0 -MMD -MP -c $< -o $@

$(O)/libdmm_evolved.so: $(EVOLVED_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -Wl,-soname,$(@F) -o $@ $^ -ldl -lpthread

# How `dmm build` compiles a .dmm into a libdmm_evolved.so without make:
# the sources of libdmm_evolved.so and the flags, read from this file beside
# the dmm binary (make install copies the sources to PREFIX/share/dmm/src/
# and the file there, its root rewritten).  All of it without cost counting
# (DMM_COUNT=0), and without -Werror: another compiler may warn.
EVOLVED_SRC := preload/shim/backend_evolved.c $(SHIM_SRC) preload/common/options.c $(ALLOC_SRC)
BUILD_SAID  := root $(CURDIR)|cc $(CC)|cflags $(patsubst -flto,-flto=auto,$(filter-out -Werror -I.,$(PRELOAD_CFLAGS))) -DDMM_COUNT=0|ldflags -shared -Wl,-z,now -Wl,-z,relro -Wl,-soname,libdmm_evolved.so|libs -ldl -lpthread$(foreach f,$(EVOLVED_SRC),|src $(f))
$(O)/dmm-build.txt: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '# dmm build: how a .dmm becomes libdmm_evolved.so (written by make)' \
	    '$(subst |,' ',$(subst $() |,|,$(BUILD_SAID)))' | cmp -s - $@ || \
	 printf '%s\n' '# dmm build: how a .dmm becomes libdmm_evolved.so (written by make)' \
	    '$(subst |,' ',$(subst $() |,|,$(BUILD_SAID)))' > $@

# The candidates `make evolve` measures (scripts/measure_candidates.py): the
# library of any .dmm, $(O)/candidates/[DIR/]NAME.so from NAME.c (dmm codegen),
# linked with the objects of libdmm_evolved.so.
$(O)/candidates/%.o: $(O)/candidates/%.c | deps
	$(CC) $(PRELOAD_CFLAGS) -DDMM_COUNT=0 -c $< -o $@

$(O)/candidates/%.so: $(O)/candidates/%.o $(filter-out $(O)/evolved/dmm_evolved.o,$(EVOLVED_OBJ))
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -Wl,-soname,$(@F) -o $@ $^ -ldl -lpthread

# version.c alone sees the version, the revision and whether the MPI plugin
# is built; it is compiled again only when they change.
VERSION_SAID := $(VERSION) $(GIT_REV) $(if $(MPI_SO),mpi)
$(O)/version.said: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION_SAID)' | cmp -s - $@ || echo '$(VERSION_SAID)' > $@

$(O)/obj/codegen/cli/version.o: codegen/cli/version.c $(O)/version.said | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DMM_CFLAGS) -DDMM_VERSION='"$(VERSION)"' -DDMM_GIT_REV='"$(GIT_REV)"' \
	    -DDMM_MPI_BUILT=$(if $(MPI_SO),1,0) -MMD -MP -c $< -o $@

$(O)/libdmmcore.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# --whole-archive: the class registry refers to the classes weakly, which
# alone would not pull them out of the archive.
WHOLE = -Wl,--whole-archive $(O)/libdmmcore.a -Wl,--no-whole-archive

$(O)/dmm: $(O)/obj/codegen/cli/dmm.o $(O)/libdmmcore.a
	$(CC) $(CFLAGS) $(DMM_CFLAGS) $(LDFLAGS) -o $@ $< $(WHOLE) $(LDLIBS_CORE)

$(O)/libdmm_mpi.so: codegen/search/mpi_plugin.c codegen/search/mpi.h | deps
	OMPI_CC=$(CC) $(MPICC) $(CFLAGS) $(DMM_CFLAGS) -fvisibility=hidden -shared -o $@ $<

$(O)/bench/%: bench/%.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< -lpthread

$(O)/bench/lib%.so: bench/lib%.c | deps
	@mkdir -p $(dir $@)
	$(CC) -O2 -g $(DMM_CFLAGS) $(NO_MALLOC_BUILTINS) -shared -o $@ $<

bench: all $(O)/test/progs/libmtrace_on.so
	@python3 bench/tracer_overhead.py --build $(O)
	@python3 bench/sim_speed.py --build $(O)
	@python3 bench/evolve_speed.py --build $(O)
	@python3 bench/evolved_speed.py --build $(O)
	@python3 bench/peers.py --build $(O)
	@python3 bench/programs.py --build $(O)
	@python3 bench/fastpath.py --build $(O)
	@python3 bench/bounds.py --build $(O)
	@python3 bench/tune_glibc.py --build $(O)
	@python3 bench/offload.py --build $(O)
	@python3 bench/mdriver.py --build $(O)
	@python3 bench/latency.py --build $(O)
	@$(O)/dmm report $(O)/bench

demo: all
	@scripts/demo.sh

# The whole pipeline on the bundled workload, or on TRACE=file: stats,
# grammar, search, codegen, libdmm_evolved.so, report (scripts/evolve.sh).
# RUN='PROGRAM ARGS' (the candidates measured on the program itself) reaches
# it in the environment, as given on the command line, quotes and all; a RUN
# of the caller's environment does not.
evolve: deps all
	@$(if $(filter command line,$(origin RUN)),,env -u RUN) \
	    TRACE='$(TRACE)' POP='$(POP)' GENS='$(GENS)' SEED='$(SEED)' JOBS='$(JOBS)' TIME='$(TIME)' \
	    MEASURE='$(MEASURE)' OBJECTIVES='$(OBJECTIVES)' PICK='$(PICK)' HOLDOUT='$(HOLDOUT)' POOL='$(POOL)' \
	    MPI='$(MPI)' BUILD='$(BUILD)' scripts/evolve.sh

# Your program under glibc, jemalloc, mimalloc, tcmalloc and the library
# make evolve built for it (EVOLVED=lib or make evolve's directory; by
# default the newest one evolved for a program of CMD's name), REPS rounds,
# side by side (bench/compare.py): CMD='PROGRAM ARGS', run in this folder;
# PRESETS=1 adds the paper's five reference managers, HUGE=1 the peers with
# huge pages turned on.
compare: deps $(O)/dmm
	@if [ -z '$(strip $(CMD))' ]; then \
	  echo "usage: make compare CMD='PROGRAM ARGS' [EVOLVED=LIB|DIR] [REPS=N] [PRESETS=1] [HUGE=1]" >&2; exit 2; fi
	@python3 bench/compare.py --build '$(O)' $(if $(EVOLVED),--evolved '$(EVOLVED)') \
	    $(if $(REPS),--reps $(REPS)) $(if $(PRESETS),--presets) $(if $(HUGE),--huge-peers) \
	    -- $(CMD)

# glibc malloc's tunables for TRACE=file (dmm tune-glibc), or for the bundled
# workload, recorded first (work_media -f 150: about 110k operations);
# POP, GENS, SEED, REPS, TIME passed through.  The result is also left in
# build/tune-glibc/NAME.txt.
TUNE_FRAMES ?= 150
tune-glibc: deps $(O)/dmm $(O)/libdmmtrace.so $(BENCH_PROGS)
	@mkdir -p $(O)/tune-glibc; trace='$(TRACE)'; \
	if [ -z "$$trace" ]; then \
	  trace=$(O)/tune-glibc/work_media.trc; rm -f "$$trace"; \
	  echo "tune-glibc: recording LD_PRELOAD=$(O)/libdmmtrace.so $(O)/bench/work_media -f $(TUNE_FRAMES)"; \
	  DMM_TRACE_FILE="$$trace" LD_PRELOAD='$(abspath $(O))/libdmmtrace.so' \
	      $(O)/bench/work_media -f $(TUNE_FRAMES) >/dev/null || exit 1; \
	fi; \
	name=$$(basename "$$trace"); name=$${name%.*}; \
	$(O)/dmm tune-glibc $(if $(POP),--pop $(POP)) $(if $(GENS),--gens $(GENS)) \
	    $(if $(SEED),--seed $(SEED)) $(if $(REPS),--reps $(REPS)) $(if $(TIME),--time $(TIME)) \
	    "$$trace" >$(O)/tune-glibc/$$name.txt; rc=$$?; cat $(O)/tune-glibc/$$name.txt; exit $$rc

# make install PREFIX=/usr/local DESTDIR=: the tool, the three libraries,
# the report scripts, the manual and Tab completion, with a list of what was
# written that make uninstall (same PREFIX and DESTDIR) removes exactly
# (scripts/dist/install.sh says where each goes).
install: all
	@scripts/dist/install.sh install --build '$(O)' --prefix '$(PREFIX)' --destdir '$(DESTDIR)'

uninstall:
	@scripts/dist/install.sh uninstall --prefix '$(PREFIX)' --destdir '$(DESTDIR)'

# make deb: build/deb/dmm_VERSION_ARCH.deb, built from a copy of the tree by
# Debian's tools (dpkg-buildpackage, debhelper; scripts/dist/deb.sh).
# make deb-check: that package checked by dpkg-deb and lintian, then
# installed with apt into a fresh Debian 12 chroot and run there
# (scripts/dist/deb_check.sh; the chroot needs root and debootstrap).
deb:
	@scripts/deps.sh --deb
	@VERSION='$(VERSION)' GIT_REV='$(GIT_REV)' scripts/dist/deb.sh '$(O)/deb'

deb-check: deb
	@scripts/dist/deb_check.sh '$(O)/deb' '$(VERSION)'

clean:
	@! mountpoint -q $(BUILD)/deb-chroot/proc 2>/dev/null || umount $(BUILD)/deb-chroot/proc
	rm -rf $(BUILD)

# The tests, fuzzing and ThreadSanitizer: rules beside what they build.
include test/test.mk test/fuzz/fuzz.mk test/tsan/tsan.mk

# (not the Debian package's own build tree, nor its chroot)
-include $(shell find $(O) \( -path '$(O)/deb' -o -path '$(O)/deb-chroot' \) -prune -o \
                      -name '*.d' -type f -print 2>/dev/null)
