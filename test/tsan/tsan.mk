# tsan.mk - the ThreadSanitizer drivers of test/tsan/ (included by the
# Makefile; make check-tsan, run by make check-sanitize).
#
# Criterion does not start under TSan and a
# TSan runtime cannot sit under an LD_PRELOAD'd malloc, so plain drivers are
# built with -fsanitize=thread together with the library code they drive:
# the chain and its classes (tsan_chain: every preset, two multi-class
# chains, codegen/default.dmm), the malloc family of libdmm.so and of
# libdmm_evolved.so with its exported names prefixed tsan_shim_ (objcopy),
# and the trace writer as a library of its own (tsan_tracer).  clang:
# gcc 12's TSan runtime crashes when a thread that used libunwind exits.
TSANCC    ?= clang
TS        := $(O)/tsan
TSAN_FLAGS := -O1 -g -fsanitize=thread $(DMM_CFLAGS) $(NO_MALLOC_BUILTINS)
TSAN_ALLOC    := $(patsubst %.c,$(TS)/obj/%.o,$(filter-out preload/shim/%,$(DMM_SO_SRC)))
TSAN_ALLOC_NC := $(patsubst %.c,$(TS)/nocount/%.o,$(filter-out preload/shim/%,$(DMM_SO_SRC)))
TSAN_WRITER   := $(patsubst %.c,$(TS)/obj/%.o,$(filter-out preload/recorder/trace_shim.c,$(TRACE_SO_SRC)))
TSAN_READER   := $(patsubst %.c,$(TS)/obj/%.o,$(wildcard tracer/base/*.c tracer/format/*.c))
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
	$(TSANCC) $(TSAN_FLAGS) -shared -o $@ $(filter %.o,$^) -ldl -lpthread
$(TS)/tsan_tracer: $(TS)/obj/test/tsan/tsan_tracer.o $(TSAN_READER) $(TS)/libdmmtrace_tsan.so
	$(TSANCC) $(TSAN_FLAGS) -o $@ $(filter %.o,$^) -L$(TS) -ldmmtrace_tsan -Wl,-rpath,'$$ORIGIN' -lzstd -lm

.PHONY: check-tsan

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
