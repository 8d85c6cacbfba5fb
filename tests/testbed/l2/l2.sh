# vtier testbed, L2 main. Appended to the L2 initramfs by each run (overlay),
# started by the image's /init. Reports that the guest is up and under which
# hypervisor, then serves the control channel (vtier-tbctl agent) forever.
name=$(sed -n 's/.*vtier.name=\([^ ]*\).*/\1/p' /proc/cmdline)
hv=$(dmesg | sed -n 's/.*Hypervisor detected: //p' | head -1)
echo "VTIER-TB-L2: $name up at $(cut -d' ' -f1 /proc/uptime) s, hypervisor: ${hv:-none}"
# vtier.modules=a,b,/path/c.ko: modprobe names, insmod paths (e.g. a module
# added with the runner's --l2-file).
for m in $(sed -n 's/.*vtier.modules=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' '); do
    case "$m" in
        */*) insmod "$m" ;;
        *) modprobe "$m" ;;
    esac || echo "VTIER-TB-L2: loading module $m failed"
done
if grep -q 'vtier.shell=1' /proc/cmdline; then
    vtier-tbctl agent --name vtier.ctl > /run/agent.log 2>&1 &
    echo "VTIER-TB-L2: shell (poweroff -f to leave)"
    setsid cttyhack sh -l
    exit 0
fi
exec vtier-tbctl agent --name vtier.ctl
