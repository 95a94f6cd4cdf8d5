# mk/reliab.mk: the reliability campaign (issue 15).
#
# `make fuzz-long` (not in CI: hours of CPU) runs every libFuzzer target
# that `make fuzz` builds (one per tests/fuzz/fuzz-*.c) from its seeds, for
# FUZZ_RUNS executions (default 10^7) or FUZZ_TIME seconds each, and
# prints a line per target; see tests/fuzz/long.sh for the knobs.
.PHONY: fuzz-long
fuzz-long: fuzz
	@sh tests/fuzz/long.sh build-fuzz/libfuzzer

# The CLI mutation test (tests/mutate/), run by `make test`.
MUTATE_SRCS := $(wildcard tests/mutate/*.c)
MUTATE := $(BUILD)/qp-mutate

$(MUTATE): $(call obj,$(MUTATE_SRCS)) $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(call obj,$(MUTATE_SRCS)) $(LIB) $(LDLIBS)

$(call obj,$(MUTATE_SRCS)): | $(GEN_H)

test-run: $(MUTATE)
