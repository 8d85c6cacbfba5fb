# make install / make uninstall (docs/libvirt.md, "Install"): vtierd, vtierctl, the
# systemd unit, the libvirt hook, the policy schema, a default config and the docs;
# vtier-memd (the remote tier's memory server, docs/remote.md), its XDP program and unit.
#   make install [PREFIX=/usr/local] [DESTDIR=]   then: systemctl daemon-reload,
#       systemctl enable --now vtierd, and restart libvirtd once so it sees the hook
#   make uninstall                                 the same files; the config stays if edited
#   make check-install                             both into a scratch DESTDIR, checked
#   make install-files                             the same files from a built $(BUILD), no
#       build step: debian/rules stages the packages with it (BUILD=debian/build PREFIX=/usr)
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     := $(PREFIX)/bin
LIBEXECDIR := $(PREFIX)/libexec
DATADIR    := $(PREFIX)/share/vtier
DOCDIR     := $(PREFIX)/share/doc/vtier
UNITDIR    ?= /lib/systemd/system
HOOKDIR    ?= /etc/libvirt/hooks/qemu.d
CONFDIR    ?= /etc/vtier
INSTALL_DOCS := docs/libvirt.md docs/vtierd.md docs/abi-control.md docs/tco.md \
	docs/remote.md docs/grafana-vtier.json

CHECK_TARGETS += check-install

.PHONY: install install-files uninstall check-install

install: build
	$(MAKE) --no-print-directory install-files
	@echo "installed; next: systemctl daemon-reload && systemctl enable --now vtierd;"
	@echo "restart libvirtd once so that it runs the hook (docs/libvirt.md)"

install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(HOOKDIR) $(DESTDIR)$(CONFDIR) \
	    $(DESTDIR)$(LIBEXECDIR)/vtier
	install -m 0755 $(BUILD)/host-agent/tools/vtierd $(BUILD)/host-agent/tools/vtierctl \
	    $(BUILD)/host-agent/tools/vtier-memd $(DESTDIR)$(BINDIR)/
	install -m 0644 $(BUILD)/host-agent/remote/memd_steer.bpf.o $(DESTDIR)$(LIBEXECDIR)/vtier/
	@# the hook: a program under libexec, linked from libvirt's qemu.d (libvirt
	@# stat()s and runs each executable there; /etc holds no binaries)
	install -m 0755 $(BUILD)/host-agent/tools/vtier-libvirt-hook $(DESTDIR)$(LIBEXECDIR)/vtier/
	ln -sfn $(LIBEXECDIR)/vtier/vtier-libvirt-hook $(DESTDIR)$(HOOKDIR)/50-vtier
	install -m 0644 libvirt-hooks/vtier-policy.rng $(DESTDIR)$(DATADIR)/
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' \
	    host-agent/tools/vtierd.service.in > $(DESTDIR)$(UNITDIR)/vtierd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vtierd.service
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' \
	    -e 's|@LIBEXECDIR@|$(LIBEXECDIR)|g' \
	    host-agent/tools/vtier-memd.service.in > $(DESTDIR)$(UNITDIR)/vtier-memd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vtier-memd.service
	@# an edited config is the operator's: never overwritten
	if [ -e $(DESTDIR)$(CONFDIR)/vtierd.conf ]; then \
	    echo "install: keeping $(DESTDIR)$(CONFDIR)/vtierd.conf"; \
	else install -m 0644 host-agent/tools/vtierd.conf $(DESTDIR)$(CONFDIR)/vtierd.conf; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/vtierd $(DESTDIR)$(BINDIR)/vtierctl $(DESTDIR)$(BINDIR)/vtier-memd \
	    $(DESTDIR)$(LIBEXECDIR)/vtier/memd_steer.bpf.o $(DESTDIR)$(UNITDIR)/vtier-memd.service \
	    $(DESTDIR)$(LIBEXECDIR)/vtier/vtier-libvirt-hook \
	    $(DESTDIR)$(HOOKDIR)/50-vtier $(DESTDIR)$(UNITDIR)/vtierd.service \
	    $(DESTDIR)$(DATADIR)/vtier-policy.rng $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(INSTALL_DOCS)))
	-rmdir $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(LIBEXECDIR)/vtier 2>/dev/null
	if cmp -s host-agent/tools/vtierd.conf $(DESTDIR)$(CONFDIR)/vtierd.conf; then \
	    rm -f $(DESTDIR)$(CONFDIR)/vtierd.conf; rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(CONFDIR)/vtierd.conf ]; then \
	    echo "uninstall: $(DESTDIR)$(CONFDIR)/vtierd.conf was edited: kept"; fi

check-install: build
	@set -e; d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; \
	$(MAKE) --no-print-directory install DESTDIR=$$d >/dev/null; \
	for f in $(BINDIR)/vtierd $(BINDIR)/vtierctl $(BINDIR)/vtier-memd \
	    $(LIBEXECDIR)/vtier/vtier-libvirt-hook; do \
	    [ -x $$d$$f ] || { echo "check-install: $$f missing"; exit 1; }; done; \
	[ "$$(readlink $$d$(HOOKDIR)/50-vtier)" = $(LIBEXECDIR)/vtier/vtier-libvirt-hook ] || \
	    { echo "check-install: $(HOOKDIR)/50-vtier is not a link to the hook"; exit 1; }; \
	for f in $(UNITDIR)/vtierd.service $(UNITDIR)/vtier-memd.service $(CONFDIR)/vtierd.conf \
	    $(DATADIR)/vtier-policy.rng $(LIBEXECDIR)/vtier/memd_steer.bpf.o \
	    $(DOCDIR)/libvirt.md $(DOCDIR)/remote.md $(DOCDIR)/grafana-vtier.json; do \
	    [ -f $$d$$f ] || { echo "check-install: $$f missing"; exit 1; }; done; \
	if command -v systemd-analyze >/dev/null; then \
	    u=$$(mktemp -d); sed 's|^ExecStart=$(BINDIR)|ExecStart='$$d'$(BINDIR)|' \
	        $$d$(UNITDIR)/vtierd.service > $$u/vtierd.service; \
	    systemd-analyze verify $$u/vtierd.service; \
	    sed 's|^ExecStart=$(BINDIR)|ExecStart='$$d'$(BINDIR)|' \
	        $$d$(UNITDIR)/vtier-memd.service > $$u/vtier-memd.service; \
	    systemd-analyze verify $$u/vtier-memd.service; rm -rf $$u; fi; \
	$$d$(BINDIR)/vtier-memd --help | grep -q -- --listen; \
	$$d$(BINDIR)/vtierd --help | grep -q -- --libvirt-uri; \
	echo "# edited" >> $$d$(CONFDIR)/vtierd.conf; \
	$(MAKE) --no-print-directory install DESTDIR=$$d | grep keeping >/dev/null; \
	$(MAKE) --no-print-directory uninstall DESTDIR=$$d >/dev/null; \
	left=$$(cd $$d && find . ! -type d | sort); \
	[ "$$left" = "./etc/vtier/vtierd.conf" ] || { echo "check-install: left: $$left"; exit 1; }; \
	rm $$d$(CONFDIR)/vtierd.conf; $(MAKE) --no-print-directory install DESTDIR=$$d >/dev/null; \
	$(MAKE) --no-print-directory uninstall DESTDIR=$$d >/dev/null; \
	left=$$(cd $$d && find . ! -type d | sort); \
	[ -z "$$left" ] || { echo "check-install: left after uninstall: $$left"; exit 1; }; \
	echo "check-install: install, keep an edited config, uninstall: ok"
