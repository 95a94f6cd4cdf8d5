# mk/fuzzcost.mk: `make fuzz` builds the numeric kernels (kernels/) without
# libFuzzer's comparison tracing (trace-cmp): its callback on every loop
# bound and value compare of an elementwise loop was a third of
# fuzz-fuse's time and guides nothing (their edge coverage stays).
ifeq ($(SAN),fuzz)
$(BUILD)/obj/kernels/%.o: CFLAGS += -fno-sanitize-coverage=trace-cmp
endif
