# mk/onnx.mk: ONNX support. `make models` fetches the pinned test models
# (data/models.lock) into data/cache/; the tests that need them run the
# same script themselves.
.PHONY: models
models:
	@sh scripts/fetch-models.sh
