# mk/analysis.mk: the demo-data generator (scripts/mkdemo.c), which the
# demo and the CLI tests run.

MKDEMO := $(BUILD)/mkdemo

$(MKDEMO): $(BUILD)/obj/scripts/mkdemo.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/obj/scripts/mkdemo.o: | $(GEN_H)

# the CLI tests (tests/cli/test-{diff,inspect,demo}.sh) use it
test-run: $(MKDEMO)
