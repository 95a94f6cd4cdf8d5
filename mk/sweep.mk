# mk/sweep.mk: bench/bench-sweep.sh makes its recognizer inputs with the
# demo-data generator.
bench: $(MKDEMO)
