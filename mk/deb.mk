# Debian packages (debian/, docs/install-deb.md): vtier, vtier-memd,
# vtier-tdp-dkms, vtier-guest-dkms.
#   make deb         dpkg-buildpackage -us -uc -b in a copy of the work tree (git's
#                    tracked and untracked files, not the ignored build dirs:
#                    neither build/ nor a stray debian/build is packaged) in $(DEB_DIR);
#                    the .debs and the .changes land in $(DEB_DIR). No tests
#                    (nocheck: make check runs them), parallel=2.
#   make check-deb   make deb, then lintian on the .changes (no error, no warning
#                    that is not overridden in debian/*.lintian-overrides), the
#                    conffiles, the file list against make install's (mk/install.mk,
#                    PREFIX=/usr), the maintainer scripts (vtierd enabled, vtier-memd
#                    not, each DKMS tree where dkms.conf says), the DKMS trees'
#                    includes; the packages unpacked with dpkg -x into a scratch root
#                    (the machine's dpkg database and root untouched, no maintainer
#                    script run): vtierd/vtierctl/vtier-memd --help from it and
#                    systemd-analyze verify --root on both units.
DEB_DIR     ?= $(BUILD)/deb
DEB_VERSION  = $(shell dpkg-parsechangelog -S Version)

CHECK_TARGETS += check-deb

.PHONY: deb check-deb

deb: deps
	@set -e; rm -rf $(DEB_DIR); src=$(DEB_DIR)/vtier-$(DEB_VERSION); mkdir -p $$src; \
	git ls-files -z --cached --others --exclude-standard \
	    | xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh \
	    | tar --null -T - -cf - | tar -xf - -C $$src; \
	cd $$src && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	    dpkg-buildpackage -us -uc -b > ../dpkg-buildpackage.log 2>&1 \
	    || { tail -40 ../dpkg-buildpackage.log; echo "deb: dpkg-buildpackage failed:" \
	         "$(DEB_DIR)/dpkg-buildpackage.log"; exit 1; }; \
	ls ../*.deb

check-deb: deb
	scripts/check-deb $(DEB_DIR)
