/* piquant.h: the only header applications include
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#define __PIQUANT_H_INSIDE__

#include <piquant/piq-version.h>
#include <piquant/piq-types.h>
#include <piquant/piq-enum-types.h>
#include <piquant/piq-error.h>
#include <piquant/piq-dtype.h>
#include <piquant/piq-format.h>
#include <piquant/piq-recipe.h>
#include <piquant/piq-tensor.h>
#include <piquant/piq-quantizer.h>
#include <piquant/piq-observer.h>
#include <piquant/piq-qat.h>
#include <piquant/piq-matmul.h>
#include <piquant/piq-io.h>

#undef __PIQUANT_H_INSIDE__
