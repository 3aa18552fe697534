/*
 * errors.c: the engine's error strings and the helper every failure path
 * that explains itself goes through.
 */
#include <stdio.h>

#include "engine/base.h"
