# mk/quant.mk: build additions for quant/.
#
# The quantizer's inner loops (quant/rtn.c, pack.c, qparams.c) only
# vectorize under GCC's dynamic cost model (-O2 uses the "very cheap" one,
# which refuses loops needing an epilogue); bench-rtn measures the effect.
ifneq ($(CC_IS_CLANG),1)
$(BUILD)/obj/quant/%.o: CFLAGS += -fvect-cost-model=dynamic
endif
