# dmm - a memory allocator evolved for each program.
#
#   make              build build/libdmmtrace.so and build/dmm
#   make test         unit, integration and short fuzz tests (Criterion)
#   make check-sanitize  the tools' tests under ASan + UBSan, then check-tsan
#   make check-tsan   both libraries' multi-threaded work under ThreadSanitizer
#   make fuzz         long libFuzzer runs of every reader (FUZZ_SECONDS=)
#   make bench        benchmarks side by side, then build/bench/report.md (dmm report)
#   make evolve       an allocator evolved for TRACE= (or the bundled workload)
#   make demo         trace the bundled workload and print its statistics
#   make tune-glibc   glibc malloc tunables for TRACE= (or the bundled workload)
#   make install      PREFIX=/usr/local DESTDIR=
#   make clean

CC       ?= gcc
FUZZCC   ?= clang
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    ?= build
O        := $(BUILD)

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
# Flags the code needs whatever CFLAGS a user (or check-sanitize) gives.
DMM_CFLAGS := $(WARN) -std=gnu11 -fPIC -D_GNU_SOURCE -I.
# Programs that tests run under the preload libraries are never sanitized:
# a sanitizer runtime must come first in the library list.
PROG_CFLAGS := -O2 -g $(DMM_CFLAGS)
LDLIBS_CORE := -lzstd -lm

# The modules of the dmm tool.  preload/ belongs to the preload libraries
# only; dmm_main.c is the dispatcher.
CORE_SRC := $(wildcard tracer/*/*.c allocators/*/*.c) $(filter-out codegen/cli/dmm.c,$(wildcard codegen/*/*.c))
CORE_OBJ := $(CORE_SRC:%.c=$(O)/obj/%.o)

TRACE_SO_SRC := preload/recorder/trace_shim.c preload/common/options.c preload/recorder/recorder.c tracer/format/crc32.c
TRACE_SO_OBJ := $(TRACE_SO_SRC:%.c=$(O)/pic/%.o)
# libdmm.so: the allocator classes and the chain, without the simulator.
ALLOC_SRC    := $(wildcard allocators/core/*.c allocators/classes/*.c allocators/chain/*.c)
# The malloc family both DMM libraries share; each adds its back end.
SHIM_SRC     := preload/shim/shim.c preload/shim/check.c preload/shim/offload.c
DMM_SO_SRC   := $(SHIM_SRC) preload/shim/backend_chain.c preload/common/options.c $(ALLOC_SRC)
DMM_SO_OBJ   := $(DMM_SO_SRC:%.c=$(O)/pic/%.o)

# Criterion tests: test/unit (one module each), test/integration (real
# programs and the preload libraries), test/stress (threads, fork, signals,
# exhaustion).
UNIT_BIN   := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/unit/test_*.c))
INTEG_BIN  := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/integration/test_*.c))
STRESS_BIN := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/stress/test_*.c))
TEST_BIN   := $(UNIT_BIN) $(INTEG_BIN) $(STRESS_BIN)
BENCH_PROGS := $(patsubst bench/%.c,$(O)/bench/%,$(wildcard bench/work_*.c))
TEST_HELPERS := $(patsubst test/progs/%.c,$(O)/test/progs/%,$(filter-out test/progs/lib%.c,$(wildcard test/progs/*.c))) \
                $(patsubst test/progs/%.c,$(O)/test/progs/%.so,$(wildcard test/progs/lib*.c))
FUZZ_SRC  := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:test/fuzz/%.c=$(O)/fuzz/%)


.PHONY: all test check check-layout check-sanitize check-tsan fuzz fuzz-short bench demo install clean deps unit integration stress evolve tune-glibc FORCE
all: $(O)/libdmmtrace.so $(O)/libdmm.so $(O)/libdmm_evolved.so $(O)/dmm $(BENCH_PROGS)

# Every build first makes sure the Debian packages are there (fast when they
# are; installs them as root, else prints the apt-get command and stops).
deps:
	@scripts/deps.sh

$(O)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DMM_CFLAGS) -MMD -MP -c $< -o $@

# The preload library: no stack protector surprises, no lazy binding, hidden
# internals; its code must never call malloc.
PRELOAD_CFLAGS := -O2 -g -flto $(WARN) -std=gnu11 -fPIC -D_GNU_SOURCE -I. -fvisibility=hidden -ftls-model=initial-exec \
                  -fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc -fno-builtin-realloc
$(O)/pic/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -MMD -MP -c $< -o $@

$(O)/libdmmtrace.so: $(TRACE_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -lunwind -lzstd -ldl -lpthread

$(O)/libdmm.so: $(DMM_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -ldl -lpthread

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
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -ldl -lpthread

$(O)/libdmmcore.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# --whole-archive: the class registry refers to the classes weakly, which
# alone would not pull them out of the archive.
WHOLE = -Wl,--whole-archive $(O)/libdmmcore.a -Wl,--no-whole-archive

$(O)/dmm: $(O)/obj/codegen/cli/dmm.o $(O)/libdmmcore.a
	$(CC) $(CFLAGS) $(DMM_CFLAGS) -o $@ $< $(WHOLE) $(LDLIBS_CORE)

$(O)/bench/%: bench/%.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< -lpthread

$(O)/test/progs/%.so: test/progs/%.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -shared -o $@ $<

$(O)/test/progs/%: test/progs/%.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< -lpthread

$(O)/test/%: test/%.c $(O)/libdmmcore.a | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DMM_CFLAGS) -DDMM_BUILD_DIR='"$(abspath $(O))"' -DDMM_SRC_DIR='"$(CURDIR)"' \
	    -o $@ $< $(WHOLE) -lcriterion $(LDLIBS_CORE) -lpthread

# libFuzzer harnesses, one per reader; built with clang.  The modules are
# compiled once (instrumented for the fuzzer, not linked with its main) into
# an archive that every harness links.
FUZZ_CORE_CFLAGS := -O1 -g $(WARN) -std=gnu11 -D_GNU_SOURCE -I.
FUZZ_CFLAGS := $(FUZZ_CORE_CFLAGS) -fsanitize=fuzzer,address,undefined
FUZZ_CORE_OBJ := $(CORE_SRC:%.c=$(O)/fuzzcore/%.o)
$(O)/fuzzcore/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(FUZZCC) $(FUZZ_CORE_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@

$(O)/fuzzcore/libfuzzcore.a: $(FUZZ_CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(O)/fuzz/%: test/fuzz/%.c $(O)/fuzzcore/libfuzzcore.a | deps
	@mkdir -p $(dir $@)
	$(FUZZCC) $(FUZZ_CFLAGS) -o $@ $< -Wl,--whole-archive $(O)/fuzzcore/libfuzzcore.a \
	    -Wl,--no-whole-archive $(LDLIBS_CORE)

FUZZ_SECONDS ?= 300
FUZZ_SHORT   ?= 10
fuzz-short: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); \
	  mkdir -p $(O)/fuzz/work/$$n; \
	  echo "fuzz: $$n for $(FUZZ_SHORT)s"; \
	  $$f -max_total_time=$(FUZZ_SHORT) -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	      -print_final_stats=1 $(O)/fuzz/work/$$n test/corpus/$${n#fuzz_} \
	      >$(O)/fuzz/$$n.log 2>&1 || { tail -40 $(O)/fuzz/$$n.log; exit 1; }; \
	  grep -h 'stat::number_of_executed_units' $(O)/fuzz/$$n.log; done
	@echo "fuzz: $(words $(FUZZ_BIN)) passed, 0 failed"

fuzz: $(FUZZ_BIN)
	@$(MAKE) --no-print-directory fuzz-short FUZZ_SHORT=$(FUZZ_SECONDS)

unit: all $(UNIT_BIN)
	@scripts/run_tests.sh $(UNIT_BIN)

integration: all $(INTEG_BIN) $(TEST_HELPERS)
	@scripts/run_tests.sh $(INTEG_BIN)

stress: all $(STRESS_BIN) $(TEST_HELPERS)
	@scripts/run_tests.sh $(STRESS_BIN)

# Every Criterion test, with one line of totals.
check: all $(TEST_BIN) $(TEST_HELPERS)
	@scripts/run_tests.sh $(TEST_BIN)

# No include points upward, no function is too long (scripts/layers.txt).
check-layout:
	@python3 scripts/check_layout.py

test: check-layout check
	@$(MAKE) --no-print-directory fuzz-short
	@$(MAKE) --no-print-directory check-sanitize

# The tools' tests under ASan + UBSan, in a build tree of their own.
check-sanitize: | deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp:print_suppressions=0 \
	$(MAKE) --no-print-directory check BUILD=$(BUILD)/sanitize \
	    CFLAGS='-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all' \
	    SANITIZE=1
	@$(MAKE) --no-print-directory check-tsan

# ThreadSanitizer (test/tsan/): Criterion does not start under TSan and a
# TSan runtime cannot sit under an LD_PRELOAD'd malloc, so plain drivers are
# built with -fsanitize=thread together with the library code they drive:
# the chain and its classes (tsan_chain: every preset, two multi-class
# chains, codegen/default.dmm), the malloc family of libdmm.so and of
# libdmm_evolved.so with its exported names prefixed tsan_shim_ (objcopy),
# and the trace writer as a library of its own (tsan_tracer).  clang:
# gcc 12's TSan runtime crashes when a thread that used libunwind exits.
TSANCC    ?= clang
TS        := $(O)/tsan
TSAN_FLAGS := -O1 -g -fsanitize=thread $(WARN) -std=gnu11 -D_GNU_SOURCE -fPIC \
              -I. -fno-builtin-malloc -fno-builtin-free \
              -fno-builtin-calloc -fno-builtin-realloc
TSAN_ALLOC    := $(patsubst %.c,$(TS)/obj/%.o,$(filter-out preload/shim/%,$(DMM_SO_SRC)))
TSAN_ALLOC_NC := $(patsubst %.c,$(TS)/nocount/%.o,$(filter-out preload/shim/%,$(DMM_SO_SRC)))
TSAN_WRITER   := $(patsubst %.c,$(TS)/obj/%.o,$(filter-out preload/recorder/trace_shim.c,$(TRACE_SO_SRC)))
TSAN_READER   := $(patsubst %.c,$(TS)/obj/%.o,tracer/format/trace.c tracer/format/trc_read.c \
                   tracer/format/crc32.c tracer/format/textfmt.c tracer/format/opstream.c)
TSAN_BIN  := $(TS)/tsan_chain $(TS)/tsan_libdmm $(TS)/tsan_evolved $(TS)/tsan_tracer
# Export every global name of a shim object but the dmm_ ones as tsan_shim_NAME.
TSAN_RENAME = objcopy $$(nm -g --defined-only $@.tmp | \
                awk '$$3 !~ /^dmm_/ { printf " --redefine-sym %s=tsan_shim_%s", $$3, $$3 }') $@.tmp $@ && rm $@.tmp

$(TS)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(TSANCC) $(TSAN_FLAGS) -MMD -MP -c $< -o $@
$(TS)/nocount/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(TSANCC) $(TSAN_FLAGS) -DDMM_COUNT=0 -MMD -MP -c $< -o $@
# Each library's shim objects as one (ld -r), renamed as a whole so that
# its parts still call each other.
$(TS)/shim_libdmm.o: $(patsubst %.c,$(TS)/obj/%.o,$(SHIM_SRC) preload/shim/backend_chain.c)
	$(LD) -r -o $@.tmp $^
	$(TSAN_RENAME)
$(TS)/shim_evolved.o: $(patsubst %.c,$(TS)/obj/%.o,$(SHIM_SRC)) \
                      $(TS)/nocount/preload/shim/backend_evolved.o $(TS)/evolved/dmm_evolved.o
	$(LD) -r -o $@.tmp $^
	$(TSAN_RENAME)
$(TS)/evolved/dmm_evolved.o: $(O)/evolved/dmm_evolved.c | deps
	@mkdir -p $(dir $@)
	$(TSANCC) $(TSAN_FLAGS) -DDMM_COUNT=0 -MMD -MP -c $< -o $@
$(TS)/tsan_chain: $(TS)/obj/test/tsan/tsan_chain.o $(TSAN_ALLOC)
	$(TSANCC) $(TSAN_FLAGS) -o $@ $(filter %.o,$^) -lpthread
$(TS)/tsan_libdmm: test/tsan/tsan_chain.c $(TS)/shim_libdmm.o $(TSAN_ALLOC) | deps
	$(TSANCC) $(TSAN_FLAGS) -DTSAN_SHIM='"libdmm.so"' -MMD -MP -MT $@ -MF $@.d -o $@ $(filter %.c %.o,$^) -lpthread -ldl
$(TS)/tsan_evolved: test/tsan/tsan_chain.c $(TS)/shim_evolved.o $(TSAN_ALLOC_NC) | deps
	$(TSANCC) $(TSAN_FLAGS) -DTSAN_SHIM='"libdmm_evolved.so"' -MMD -MP -MT $@ -MF $@.d -o $@ $(filter %.c %.o,$^) -lpthread -ldl
$(TS)/libdmmtrace_tsan.so: $(TSAN_WRITER)
	$(TSANCC) $(TSAN_FLAGS) -shared -o $@ $(filter %.o,$^) -lunwind -lzstd -lpthread
$(TS)/tsan_tracer: $(TS)/obj/test/tsan/tsan_tracer.o $(TSAN_READER) $(TS)/libdmmtrace_tsan.so
	$(TSANCC) $(TSAN_FLAGS) -o $@ $(filter %.o,$^) -L$(TS) -ldmmtrace_tsan -Wl,-rpath,'$$ORIGIN' -lzstd -lm

# halt_on_error: the first race ends the run, with TSan's exit status (66).
check-tsan: $(TSAN_BIN)
	@rm -rf $(TS)/trc && mkdir -p $(TS)/trc
	@export TSAN_OPTIONS='halt_on_error=1 exitcode=66' DMM_CHECK=0 DMM_STATS=0; \
	  $(TS)/tsan_chain codegen/default.dmm && \
	  DMM_CONFIG=lea $(TS)/tsan_libdmm && \
	  DMM_CONFIG=s10 DMM_CHECK=1 $(TS)/tsan_libdmm && \
	  $(TS)/tsan_evolved && DMM_CHECK=1 $(TS)/tsan_evolved && \
	  DMM_CONFIG=lea DMM_OFFLOAD=1 $(TS)/tsan_libdmm && DMM_OFFLOAD=1 $(TS)/tsan_evolved && \
	  DMM_TRACE_FILE=$(TS)/trc/stacks.%p.trc DMM_TRACE_STACK=8 DMM_TRACE_COMPRESS=zstd $(TS)/tsan_tracer && \
	  DMM_TRACE_FILE=$(TS)/trc/plain.%p.trc DMM_TRACE_STACK=0 DMM_TRACE_COMPRESS=none $(TS)/tsan_tracer
	@echo "tsan: no data race, every check passed"

bench: all $(O)/test/progs/libmtrace_on.so
	@python3 bench/tracer_overhead.py --build $(O)
	@python3 bench/sim_speed.py --build $(O)
	@python3 bench/evolved_speed.py --build $(O)
	@python3 bench/peers.py --build $(O)
	@python3 bench/tune_glibc.py --build $(O)
	@python3 bench/offload.py --build $(O)
	@$(O)/dmm report $(O)/bench

demo: all
	@scripts/demo.sh

# The whole pipeline on the bundled workload, or on TRACE=file: stats,
# grammar, search, codegen, libdmm_evolved.so, report (scripts/evolve.sh).
evolve: deps all
	@TRACE='$(TRACE)' POP='$(POP)' GENS='$(GENS)' SEED='$(SEED)' JOBS='$(JOBS)' TIME='$(TIME)' \
	    BUILD='$(BUILD)' scripts/evolve.sh

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

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(O)/dmm $(DESTDIR)$(PREFIX)/bin/dmm
	install -m 755 $(O)/libdmmtrace.so $(DESTDIR)$(PREFIX)/lib/libdmmtrace.so
	install -m 755 $(O)/libdmm.so $(DESTDIR)$(PREFIX)/lib/libdmm.so
	install -m 755 $(O)/libdmm_evolved.so $(DESTDIR)$(PREFIX)/lib/libdmm_evolved.so
	install -d $(DESTDIR)$(PREFIX)/share/dmm
	install -m 644 scripts/report.py scripts/evolve_report.py scripts/plots.py $(DESTDIR)$(PREFIX)/share/dmm/

clean:
	rm -rf $(BUILD)

-include $(shell find $(O) -name '*.d' 2>/dev/null)
