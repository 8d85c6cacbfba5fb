# libvirt integration (docs/libvirt.md).
#   make check-libvirt   vtierd against a private libvirtd on this host (no testbed):
#                        attach by policy and by name, virsh metadata --live, a bad
#                        policy refused, libvirtd restarts, the hook's deadlines
CHECK_TARGETS += check-libvirt

.PHONY: check-libvirt
check-libvirt: build
	$(MESON) test -C $(BUILD) --suite libvirt --print-errorlogs
