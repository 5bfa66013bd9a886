/* SPDX-License-Identifier: MIT OR GPL-2.0-only
 *
 * The exported dlsym. glibc's dlsym reads its caller's return address to
 * answer RTLD_NEXT (and to pick the caller's namespace), so forwarding must
 * be a jump, not a call: otherwise another interposer loaded after us that
 * asks for RTLD_NEXT would be answered relative to this library, and could
 * be handed its own function back. gdrhook_dlsym_target(handle, name)
 * returns where to go: glibc's dlsym for RTLD_NEXT and for every name we do
 * not intercept, or our handler. Both are entered with the application's
 * arguments and return address.
 */
    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    endbr64
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp                /* keep the stack 16-byte aligned */
    .cfi_adjust_cfa_offset 8
    call    gdrhook_dlsym_target    /* (handle, name): dlsym's own arguments */
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    jmp     *%rax
    .cfi_endproc
    .size   dlsym, .-dlsym

    .section .note.GNU-stack,"",@progbits
