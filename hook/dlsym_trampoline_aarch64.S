/* SPDX-License-Identifier: MIT OR GPL-2.0-only
 *
 * The exported dlsym on aarch64; the contract of dlsym_trampoline_x86_64.S.
 * glibc's dlsym reads its caller's return address (x30 on entry) to answer
 * RTLD_NEXT, so forwarding must be a branch, not a call: x30 is given back
 * exactly as the application's BL left it, and the target is entered with
 * BR. gdrhook_dlsym_target(handle, name) returns where to go: glibc's dlsym
 * for RTLD_NEXT and for every name we do not intercept, or our handler.
 *
 * Branch protection: where the compiler protects code (-mbranch-protection,
 * as Debian's and Ubuntu's arm64 toolchains may), this function starts with
 * a BTI landing pad, signs x30 while it sits on the stack, and says both in
 * its GNU property note; without the note the linker would mark the whole
 * library as unprotected. The target is entered through x16, which a
 * "bti c" landing pad accepts from BR (glibc's dlsym and our handler both
 * begin with one where BTI is on).
 */
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define LANDING_PAD hint 34 /* bti c */
#define PROPERTY_BTI 1
#else
#define LANDING_PAD
#define PROPERTY_BTI 0
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
#define SIGN_RETURN hint 25 /* paciasp */
#define AUTH_RETURN hint 29 /* autiasp */
#define PROPERTY_PAC 2
#else
#define SIGN_RETURN
#define AUTH_RETURN
#define PROPERTY_PAC 0
#endif

    .text
    .globl  dlsym
    .type   dlsym, %function
    .p2align 2
dlsym:
    .cfi_startproc
    LANDING_PAD
    SIGN_RETURN
    stp     x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset 29, -32
    .cfi_offset 30, -24
    mov     x29, sp
    stp     x0, x1, [sp, #16]       /* dlsym's own arguments, for the target */
    bl      gdrhook_dlsym_target    /* (handle, name) */
    mov     x16, x0
    ldp     x0, x1, [sp, #16]
    ldp     x29, x30, [sp], #32     /* x30: the application's return address */
    .cfi_restore 29
    .cfi_restore 30
    .cfi_def_cfa_offset 0
    AUTH_RETURN
    br      x16
    .cfi_endproc
    .size   dlsym, .-dlsym

    .section .note.GNU-stack,"",%progbits

#if PROPERTY_BTI || PROPERTY_PAC
    /* NT_GNU_PROPERTY_TYPE_0: GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .pushsection .note.gnu.property, "a"
    .p2align 3
    .word   4                       /* name size */
    .word   16                      /* descriptor size */
    .word   5                       /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz  "GNU"
    .word   0xc0000000              /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .word   4                       /* its data's size */
    .word   PROPERTY_BTI | PROPERTY_PAC
    .word   0                       /* padding to 8 bytes */
    .popsection
#endif
