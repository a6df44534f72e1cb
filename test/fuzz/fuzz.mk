# fuzz.mk - the libFuzzer harnesses of test/fuzz/ (included by the
# Makefile): one per reader, seeded from test/corpus/.  make fuzz-short (in
# make test) runs each FUZZ_SHORT seconds, make fuzz FUZZ_SECONDS.

FUZZ_SRC  := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:test/fuzz/%.c=$(O)/fuzz/%)

.PHONY: fuzz fuzz-short

# libFuzzer harnesses, one per reader; built with clang.  The modules are
# compiled once (instrumented for the fuzzer, not linked with its main) into
# an archive that every harness links.
FUZZ_CORE_CFLAGS := -O1 -g $(BASE_FLAGS)
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
