# mk/intperf.mk: build settings of the int mode's fused passes and NCHW
# kernels (branch intperf): their loops (repeated weights, table passes,
# sums) vectorize only at -O3 (GCC's -O2 cost model); integer code, and
# float code without contraction (-std=c11), so results do not change.
INTPERF_VEC_OBJS := $(BUILD)/obj/kernels/conv-s8-nchw.o \
    $(BUILD)/obj/kernels/depthwise-s8-nchw.o $(BUILD)/obj/model/qexec-fuse.o \
    $(BUILD)/obj/model/qexec-int.o
$(INTPERF_VEC_OBJS): XFLAGS := -O3
# the depthwise plane rows gather bytes with vpermb (checked at run time)
$(BUILD)/obj/kernels/x86/depthwise-s8-vnni.o: CFLAGS += -mavx512vbmi
