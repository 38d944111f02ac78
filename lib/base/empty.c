/* SPDX-License-Identifier: MIT */
/* Stands in for a layer that has no sources yet (an OBJECT library needs one). */
typedef int vega__empty_translation_unit;
