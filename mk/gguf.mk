# mk/gguf.mk: the llama.cpp oracle of the GGUF export
# (tests/oracle/llamacpp-driver.c). It needs llama.cpp's headers, which
# scripts/llamacpp-setup.sh takes from the pinned node-llama-cpp package
# into data/cache/ (the network only the first time), and loads the pinned
# prebuilt libraries with dlopen at run time. Built for the tests and the
# benchmark, not by `make`: when the setup cannot run (no network, not
# linux-x64), the driver is not built and the tests that need it skip.
LLAMACPP_DRIVER := $(BUILD)/llamacpp-driver

$(LLAMACPP_DRIVER): tests/oracle/llamacpp-driver.c scripts/llamacpp-setup.sh
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)if out=$$(sh scripts/llamacpp-setup.sh 2>&1); then \
	    $(CC) -std=c11 -g -O2 -Wall -Wextra $(WERROR) -D_GNU_SOURCE \
	        -I"$$(echo "$$out" | tail -n 1)" -o $@ $< -ldl; \
	else echo "llamacpp-driver: not built (scripts/llamacpp-setup.sh: $$out)"; fi

llamacpp-driver: $(LLAMACPP_DRIVER)
.PHONY: llamacpp-driver

test-run: $(LLAMACPP_DRIVER)
bench: $(LLAMACPP_DRIVER)
