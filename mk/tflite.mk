# mk/tflite.mk: the TFLite oracle of the tests and benchmarks
# (tests/tools/tflite-oracle.c): TensorFlow Lite's C library, fetched at
# test time by scripts/tflite-setup.sh, loaded with dlopen.
TFL_ORACLE := $(BUILD)/tflite-oracle

$(TFL_ORACLE): $(BUILD)/obj/tests/tools/tflite-oracle.o $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) -ldl

$(BUILD)/obj/tests/tools/tflite-oracle.o: | $(GEN_H)

test-run: $(TFL_ORACLE)
bench: $(TFL_ORACLE)
