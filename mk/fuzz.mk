# Fuzzing (tests/fuzz/): every parser of untrusted or operator input.
#   make fuzz                          each target FUZZ_SECONDS under libFuzzer (clang)
#   make fuzz FUZZ_TARGETS="handoff"   only these targets
# Seeds replay in make check (suite unit); new crashers go to tests/fuzz/corpus/NAME/.
# -max_len per target: large enough for what the peer may really send (a QMP
# line is up to 1 MiB, a control request 64 KiB), so deep nesting and long
# lines are reachable; 16 KiB for the rest. FUZZ_MAX_LEN overrides all.

FUZZ_SECONDS ?= 60
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS ?=

.PHONY: fuzz
fuzz: deps
	[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang $(MESON) setup $(FUZZ_BUILD) \
	    -Db_sanitize=address,undefined -Db_lundef=false -Dvm_tests=false -Dfuzzing=true \
	    -Dc_args=-fsanitize=fuzzer-no-link
	$(MESON) compile -C $(FUZZ_BUILD)
	@set -e; dir=$(FUZZ_BUILD)/tests/fuzz; \
	names="$(FUZZ_TARGETS)"; \
	[ -n "$$names" ] || names=$$(cd $$dir && ls -d fuzz-* | grep -v -e replay -e '\.p$$' | sed 's/^fuzz-//'); \
	for name in $$names; do \
	    [ -x $$dir/fuzz-$$name ] || { echo "fuzz: no target '$$name' in $$dir"; exit 1; }; \
	    if [ -d tests/fuzz/corpus/$$name ]; then seeds=tests/fuzz/corpus/$$name; \
	    else seeds=$$dir/$$name-corpus; fi; \
	    case $$name in \
	    qmp_reply|workload_spec) maxlen=262144;; \
	    ctl_request) maxlen=70000;; \
	    handoff|profile) maxlen=65536;; \
	    *) maxlen=16384;; esac; \
	    [ -z "$(FUZZ_MAX_LEN)" ] || maxlen=$(FUZZ_MAX_LEN); \
	    corpus=$$(mktemp -d); cp $$seeds/* $$corpus/; \
	    echo "==> fuzzing $$name for $(FUZZ_SECONDS) s, max_len $$maxlen (seeds: $$seeds)"; \
	    $$dir/fuzz-$$name -max_total_time=$(FUZZ_SECONDS) -max_len=$$maxlen $$corpus || \
	        { rc=$$?; rm -rf $$corpus; exit $$rc; }; \
	    rm -rf $$corpus; done
