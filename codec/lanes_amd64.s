//go:build !purego

#include "textflag.h"

// STEP decodes one entry of a chain whose bit offset is in pos and whose
// last value is in fp, stores the new value at dst and advances both. It
// jumps to stop, with the chain unchanged, when the entry's 16 bytes are
// past limit or its bits start no code word, and to wrap, with fp to be
// restored by subtracting AX, when the value wraps.
//
// AX:R11 is the 128-bit window at the entry: the two big-endian words at
// byte pos/8, shifted left by pos%8. Its top 12 bits index the table,
// whose entry is h<<4 | code length. The difference is a 1 at bit 63-h
// above the 63-h bits after the code word.
#define STEP(pos, fp, dst, stop, wrap) \
	CMPQ   pos, limit+48(FP)          \
	JGT    stop                       \
	MOVQ   pos, CX                    \
	SHRQ   $3, CX                     \
	MOVQ   (SI)(CX*1), AX             \
	MOVQ   8(SI)(CX*1), R11           \
	BSWAPQ AX                         \
	BSWAPQ R11                        \
	MOVL   pos, CX                    \
	ANDL   $7, CX                     \
	SHLQ   CX, R11, AX                \
	SHLQ   CX, R11                    \
	MOVQ   AX, R12                    \
	SHRQ   $52, R12                   \
	MOVWLZX (R8)(R12*2), R12          \
	MOVL   R12, CX                    \
	ANDL   $15, CX                    \
	JZ     stop                       \
	SHLQ   CX, R11, AX                \
	MOVL   CX, R11                    \
	SHRQ   $4, R12                    \
	SHRQ   $1, AX                     \
	BTSQ   $63, AX                    \
	MOVL   R12, CX                    \
	SHRQ   CX, AX                     \
	ADDQ   AX, fp                     \
	JCS    wrap                       \
	MOVQ   fp, dst                    \
	LEAQ   63(pos)(R11*1), pos        \
	SUBQ   R12, pos

// func quickLanesAsm(st *laneState, src *byte, tbl *[4096]uint16, out *uint64, stride, n, limit int) (done, part int)
//
// Registers: SI src, R8 tbl, R9 the round's entry of the first chain, R10
// stride; R13-R15 the chains' bit offsets, DI, DX, BX their values.
TEXT ·quickLanesAsm(SB), NOSPLIT, $8-72
	MOVQ st+0(FP), AX
	MOVQ 0(AX), R13
	MOVQ 8(AX), R14
	MOVQ 16(AX), R15
	MOVQ 24(AX), DI
	MOVQ 32(AX), DX
	MOVQ 40(AX), BX
	MOVQ src+8(FP), SI
	MOVQ tbl+16(FP), R8
	MOVQ out+24(FP), R9
	MOVQ stride+32(FP), R10
	MOVQ n+40(FP), AX
	LEAQ (R9)(AX*8), AX
	MOVQ AX, end-8(SP)

loop:
	CMPQ R9, end-8(SP)
	JAE  all
	STEP(R13, DI, (R9), stopA, wrapA)
	STEP(R14, DX, (R9)(R10*1), stopB, wrapB)
	STEP(R15, BX, (R9)(R10*2), stopC, wrapC)
	ADDQ $8, R9
	JMP  loop

wrapA:
	SUBQ AX, DI
stopA:
all:
	XORL CX, CX
	JMP  exit

wrapB:
	SUBQ AX, DX
stopB:
	MOVL $1, CX
	JMP  exit

wrapC:
	SUBQ AX, BX
stopC:
	MOVL $2, CX

exit:
	MOVQ CX, part+64(FP)
	MOVQ R9, AX
	SUBQ out+24(FP), AX
	SHRQ $3, AX
	MOVQ AX, done+56(FP)
	MOVQ st+0(FP), AX
	MOVQ R13, 0(AX)
	MOVQ R14, 8(AX)
	MOVQ R15, 16(AX)
	MOVQ DI, 24(AX)
	MOVQ DX, 32(AX)
	MOVQ BX, 40(AX)
	RET
