/* SPDX-License-Identifier: MIT */
/* x86-64 SysV context switch: callee-saved registers, MXCSR and the x87 control word. */
#if defined(__x86_64__)
        .text

/* void vega__ctx_switch(void **save (rdi), void *load (rsi)) */
        .globl  vega__ctx_switch
        .hidden vega__ctx_switch
        .type   vega__ctx_switch, @function
        .p2align 4
vega__ctx_switch:
        .cfi_startproc
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .cfi_endproc
        .size   vega__ctx_switch, .-vega__ctx_switch

/* First frame of every task: r12 = arg, r13 = entry. entry never returns. */
        .globl  vega__ctx_trampoline
        .hidden vega__ctx_trampoline
        .type   vega__ctx_trampoline, @function
        .p2align 4
vega__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip
        movq    %r12, %rdi
        callq   *%r13
        ud2
        .cfi_endproc
        .size   vega__ctx_trampoline, .-vega__ctx_trampoline

#endif

        .section .note.GNU-stack,"",%progbits
