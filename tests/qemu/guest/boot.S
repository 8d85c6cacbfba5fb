/*
 * Multiboot (v1) entry of the vtier test guest: QEMU's -kernel loads the
 * ELF at 1 MiB and jumps here in 32-bit protected mode, paging off.
 */
#define MB_MAGIC 0x1badb002
#define MB_FLAGS 0x00000003 /* page-align modules, give memory info */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .text
	.globl _start
_start:
	cli
	mov $stack_top, %esp
	push %ebx               /* multiboot info */
	push %eax               /* multiboot magic */
	call guest_main
1:  hlt
	jmp 1b

	.section .bss
	.align 16
	.space 65536
stack_top:
