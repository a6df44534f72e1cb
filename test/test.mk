# test.mk - the Criterion tests (included by the Makefile).
#
#   test/unit/         one module each
#   test/integration/  real programs under the preload libraries, the tools
#                      end to end
#   test/stress/       threads, fork, exec, signals, exhaustion
#   test/progs/        programs the tests run; test/lib/ what tests share
#
# make unit | integration | stress runs one group; make check runs all three
# with one line of totals; make test adds the layout check, short fuzz runs
# and the sanitizers.

UNIT_BIN   := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/unit/test_*.c))
INTEG_BIN  := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/integration/test_*.c))
STRESS_BIN := $(patsubst test/%.c,$(O)/test/%,$(wildcard test/stress/test_*.c))
TEST_BIN   := $(UNIT_BIN) $(INTEG_BIN) $(STRESS_BIN)
TEST_HELPERS := $(patsubst test/progs/%.c,$(O)/test/progs/%,$(filter-out test/progs/lib%.c,$(wildcard test/progs/*.c))) \
                $(patsubst test/progs/%.c,$(O)/test/progs/%.so,$(wildcard test/progs/lib*.c))

.PHONY: test check check-layout check-sanitize unit integration stress

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
