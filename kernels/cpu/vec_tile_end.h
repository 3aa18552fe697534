/*
 * vec_tile_end.h: the end of one SIMD level in vec_tile.c: its parameters of
 * the tile bodies (vec_tile_kq.h, vec_tile_q23k.h, vec_tile_q.h) undefined,
 * so the next level defines its own.  Included after each level's bodies.
 */
#undef KT_TILE
#undef KT_ATTR
#undef KT_FN
#undef KT_DOTACC
#undef KT_U8DOT
#undef KT_S8BIAS
#undef KT_S8ONE
#undef KT_S8DOT
#undef KT_OBIAS
#undef KT_ODOT
#undef KT_FLIP
