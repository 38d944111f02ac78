/* SPDX-License-Identifier: MIT */
/* AArch64 AAPCS64 context switch: x19-x30, d8-d15, sp. */
#if defined(__aarch64__)
        .text

/* void vega__ctx_switch(void **save (x0), void *load (x1)) */
        .globl  vega__ctx_switch
        .hidden vega__ctx_switch
        .type   vega__ctx_switch, %function
        .p2align 4
vega__ctx_switch:
        sub     sp, sp, #160
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8,  d9,  [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mov     x9, sp
        str     x9, [x0]
        mov     sp, x1
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8,  d9,  [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        add     sp, sp, #160
        ret
        .size   vega__ctx_switch, .-vega__ctx_switch

/* First frame of every task: x19 = arg, x20 = entry. entry never returns. */
        .globl  vega__ctx_trampoline
        .hidden vega__ctx_trampoline
        .type   vega__ctx_trampoline, %function
        .p2align 4
vega__ctx_trampoline:
        mov     x0, x19
        blr     x20
        brk     #0
        .size   vega__ctx_trampoline, .-vega__ctx_trampoline

#endif

        .section .note.GNU-stack,"",%progbits
