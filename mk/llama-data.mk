# mk/llama-data.mk: the synthetic-checkpoint generator (bench/synth-llama.c,
# model/synth-llama.h) that benchmarks and scale tests use to make
# Llama-3.2-1B- and Llama-3.1-8B-shaped checkpoints from bench/configs/.
# Its output is never committed (write it under data/cache/).

SYNTH_LLAMA := $(BUILD)/bench/synth-llama

$(SYNTH_LLAMA): $(BUILD)/obj/bench/synth-llama.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/obj/bench/synth-llama.o: | $(GEN_H)

all: $(SYNTH_LLAMA)

# tests/cli/test-synth-llama.sh runs it
test-run: $(SYNTH_LLAMA)
