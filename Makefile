# dmm - a memory allocator evolved for each program.
#
#   make              build build/libdmmtrace.so and build/dmm
#   make test         unit, integration and short fuzz tests (Criterion)
#   make check-sanitize  the tools' tests under ASan + UBSan
#   make fuzz         long libFuzzer runs of every reader (FUZZ_SECONDS=)
#   make bench        benchmarks (tracer overhead, simulator speed)
#   make demo         trace the bundled workload and print its statistics
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
DMM_CFLAGS := $(WARN) -std=gnu11 -fPIC -D_GNU_SOURCE -Itracer -Ipreload -Iallocators -Icodegen
# Programs that tests run under the preload libraries are never sanitized:
# a sanitizer runtime must come first in the library list.
PROG_CFLAGS := -O2 -g $(DMM_CFLAGS)
LDLIBS_CORE := -lzstd -lm

# The modules of the dmm tool.  trace_writer.c belongs to the preload library
# only; dmm_main.c is the dispatcher.
CORE_SRC := $(filter-out tracer/trace_writer.c tracer/dmm_main.c,$(wildcard tracer/*.c)) \
            $(wildcard allocators/*.c) $(wildcard codegen/*.c) bench/replay.c bench/report_cli.c
CORE_OBJ := $(CORE_SRC:%.c=$(O)/obj/%.o)

TRACE_SO_SRC := preload/trace_shim.c preload/options.c tracer/trace_writer.c tracer/crc32.c
TRACE_SO_OBJ := $(TRACE_SO_SRC:%.c=$(O)/pic/%.o)
# libdmm.so: the allocator classes and the chain, without the simulator.
DMM_SO_SRC   := preload/dmm_shim.c preload/options.c $(filter-out allocators/sim.c,$(wildcard allocators/*.c))
DMM_SO_OBJ   := $(DMM_SO_SRC:%.c=$(O)/pic/%.o)

TEST_SRC  := $(wildcard test/test_*.c)
TEST_BIN  := $(TEST_SRC:test/%.c=$(O)/test/%)
BENCH_PROGS := $(patsubst bench/%.c,$(O)/bench/%,$(wildcard bench/work_*.c))
TEST_HELPERS := $(patsubst test/progs/%.c,$(O)/test/progs/%,$(filter-out test/progs/lib%.c,$(wildcard test/progs/*.c))) \
                $(patsubst test/progs/%.c,$(O)/test/progs/%.so,$(wildcard test/progs/lib*.c))
FUZZ_SRC  := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:test/fuzz/%.c=$(O)/fuzz/%)


.PHONY: all test check-sanitize fuzz fuzz-short bench demo install clean deps unit evolve FORCE
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
PRELOAD_CFLAGS := -O2 -g -flto $(WARN) -std=gnu11 -fPIC -D_GNU_SOURCE -Itracer -Ipreload -Iallocators -fvisibility=hidden -ftls-model=initial-exec \
                  -fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc -fno-builtin-realloc
$(O)/pic/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(CC) $(PRELOAD_CFLAGS) -MMD -MP -c $< -o $@

$(O)/libdmmtrace.so: $(TRACE_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -lunwind -lzstd -ldl -lpthread

$(O)/libdmm.so: $(DMM_SO_OBJ)
	$(CC) $(PRELOAD_CFLAGS) -shared -Wl,-z,now -Wl,-z,relro -o $@ $^ -ldl -lpthread

# libdmm_evolved.so: the chain of EVOLVED_DMM as C source (dmm codegen), the
# shim of libdmm.so around it (preload/evolved_shim.c includes both), and the
# allocator classes built again without cost counting (DMM_COUNT=0).
# `make evolve` sets EVOLVED_DMM to the search's best.dmm.
EVOLVED_DMM ?= codegen/default.dmm
EVOLVED_OBJ := $(O)/evolved/evolved_shim.o $(O)/pic/preload/options.o \
               $(patsubst %.c,$(O)/pic-nocount/%.o,$(filter-out allocators/sim.c,$(wildcard allocators/*.c)))

# Which .dmm the generated source came from: regenerate when it changes.
$(O)/evolved/source.path: FORCE
	@mkdir -p $(dir $@)
	@echo '$(EVOLVED_DMM)' | cmp -s - $@ || echo '$(EVOLVED_DMM)' > $@
FORCE:

$(O)/evolved/dmm_evolved.c: $(EVOLVED_DMM) $(O)/evolved/source.path $(O)/dmm
	$(O)/dmm codegen -o $@ $(EVOLVED_DMM)
	cp $(EVOLVED_DMM) $(O)/evolved/source.dmm

$(O)/evolved/evolved_shim.o: preload/evolved_shim.c $(O)/evolved/dmm_evolved.c | deps
	$(CC) $(PRELOAD_CFLAGS) -DDMM_COUNT=0 -I$(O)/evolved -MMD -MP -c $< -o $@

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

$(O)/dmm: $(O)/obj/tracer/dmm_main.o $(O)/libdmmcore.a
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

# libFuzzer harnesses, one per reader; built with clang.
FUZZ_CFLAGS := -O1 -g $(WARN) -std=gnu11 -D_GNU_SOURCE -Itracer -Iallocators -Icodegen -fsanitize=fuzzer,address,undefined
$(O)/fuzz/%: test/fuzz/%.c $(CORE_SRC) | deps
	@mkdir -p $(dir $@)
	$(FUZZCC) $(FUZZ_CFLAGS) -o $@ $< $(CORE_SRC) $(LDLIBS_CORE)

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

unit: all $(TEST_BIN) $(TEST_HELPERS)
	@scripts/run_tests.sh $(TEST_BIN)

test: unit
	@$(MAKE) --no-print-directory fuzz-short
	@$(MAKE) --no-print-directory check-sanitize

# The tools' tests under ASan + UBSan, in a build tree of their own.
check-sanitize: | deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp:print_suppressions=0 \
	$(MAKE) --no-print-directory unit BUILD=$(BUILD)/sanitize \
	    CFLAGS='-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all' \
	    SANITIZE=1

bench: all $(O)/test/progs/libmtrace_on.so
	@python3 bench/tracer_overhead.py --build $(O)
	@python3 bench/sim_speed.py --build $(O)
	@python3 bench/evolved_speed.py --build $(O)
	@python3 bench/peers.py --build $(O)

demo: all
	@scripts/demo.sh

# The whole pipeline on the bundled workload, or on TRACE=file: stats,
# grammar, search, codegen, libdmm_evolved.so, report (scripts/evolve.sh).
evolve: deps all
	@TRACE='$(TRACE)' POP='$(POP)' GENS='$(GENS)' SEED='$(SEED)' JOBS='$(JOBS)' TIME='$(TIME)' \
	    BUILD='$(BUILD)' scripts/evolve.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(O)/dmm $(DESTDIR)$(PREFIX)/bin/dmm
	install -m 755 $(O)/libdmmtrace.so $(DESTDIR)$(PREFIX)/lib/libdmmtrace.so
	install -m 755 $(O)/libdmm.so $(DESTDIR)$(PREFIX)/lib/libdmm.so
	install -m 755 $(O)/libdmm_evolved.so $(DESTDIR)$(PREFIX)/lib/libdmm_evolved.so

clean:
	rm -rf $(BUILD)

-include $(shell find $(O) -name '*.d' 2>/dev/null)
	@$(O)/dmm report $(O)/bench
	install -d $(DESTDIR)$(PREFIX)/share/dmm
	install -m 644 scripts/report.py scripts/evolve_report.py scripts/plots.py $(DESTDIR)$(PREFIX)/share/dmm/
