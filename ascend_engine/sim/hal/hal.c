/*
 * hal.c -- libascend_hal.so of a simulator toolkit.  CANN toolkits ship a
 * stub of the driver's HAL library for linking (runtime/lib64/stub), and
 * many programs' CMake files link it by name (-lascend_hal) without calling
 * it: AscendCL reaches the driver on their behalf.  The simulator has no
 * driver, so this library exports no function: a program that links it
 * links and runs; one that calls a HAL function directly fails to link,
 * naming the function, as it would against a toolkit without the driver
 * (docs/toolkit.md).
 */

/* ISO C wants a translation unit to declare something. */
typedef int ae_hal_stub_unit;
