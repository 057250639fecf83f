# bash completion for piquant(1)                            -*- shell-script -*-
#
# Installed as $(datadir)/bash-completion/completions/piquant, where
# bash-completion loads it the first time `piquant` is completed; it also
# works when sourced on its own. Keep the option lists in step with
# `piquant COMMAND --help` (tests/test-tool.sh checks that they are).
#
# SPDX-License-Identifier: LGPL-2.1-or-later

_piquant_commands="info demo bench quantize dequantize inspect help"
_piquant_qtypes="uint2 int2 uint4 int4 uint8 int8 uint16 int16 uint32 int32 uint64 int64
fp8_e4m3 fp8_e5m2 fp6_e2m3 fp6_e3m2 fp4_e2m1 nf4 fp4_bnb nf8 binary q8_0 q4_0
bfp2 bfp3 bfp4 bfp5 bfp6 bfp7 bfp8"
_piquant_ftypes="f32 f64 f16 bf16"

_piquant_options()
{
    case $1 in
        quantize)
            echo "--help --dtype --preset --input-dtype --input-format --rounding --seed" \
                 "--scale-rule --no-include-zero --scale --zero-point --granularity --axis" \
                 "--symmetric --block-size --scale-dtype --double-quant --threads" \
                 "--no-progress --quiet" ;;
        dequantize)
            echo "--help --output-dtype --format --threads --no-progress --quiet" ;;
        demo)
            echo "--help --elements --seed --threads --rounding" ;;
        bench)
            echo "--help --elements --threads --repeat --op --json --simd-level --no-overhead" ;;
        inspect)
            echo "--help" ;;
        info)
            echo "--help --presets" ;;
        help)
            echo "--help" ;;
        *)
            echo "--help --version" ;;
    esac
}

_piquant_complete_files()
{
    # bash-completion's _filedir when present (it knows about spaces and ~),
    # plain file names otherwise.
    if declare -F _filedir > /dev/null; then
        _filedir "$@"
    elif [[ -n ${1-} ]]; then
        local IFS=$'\n'
        COMPREPLY=($(compgen -d -- "$cur") $(compgen -f -X "!*.$1" -- "$cur"))
    else
        local IFS=$'\n'
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

_piquant()
{
    local cur prev words cword
    if declare -F _init_completion > /dev/null; then
        _init_completion -s || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
        if [[ $cur == --*=* ]]; then
            prev=${cur%%=*}
            cur=${cur#*=}
        fi
    fi

    # The command: the first word after the global options.
    local i command= command_index=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -*) ;;
            *) command=${words[i]}; command_index=$i; break ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$(_piquant_options '')" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_piquant_commands" -- "$cur"))
        fi
        return
    fi

    # The value of an option.
    case $command:$prev in
        quantize:--dtype | quantize:-d)
            COMPREPLY=($(compgen -W "$_piquant_qtypes" -- "$cur")); return ;;
        quantize:--input-dtype | quantize:-i | dequantize:--output-dtype | dequantize:-o)
            COMPREPLY=($(compgen -W "$_piquant_ftypes" -- "$cur")); return ;;
        quantize:--input-format | dequantize:--format | dequantize:-f)
            COMPREPLY=($(compgen -W "npy raw" -- "$cur")); return ;;
        quantize:--rounding | quantize:-r)
            COMPREPLY=($(compgen -W "nearest stochastic" -- "$cur")); return ;;
        demo:--rounding | demo:-r)
            COMPREPLY=($(compgen -W "nearest stochastic both" -- "$cur")); return ;;
        quantize:--preset | quantize:-p)
            # the library's list, from the piquant being completed
            COMPREPLY=($(compgen -W "$("${words[0]}" info --presets 2> /dev/null)" -- "$cur"))
            return ;;
        quantize:--scale-rule)
            COMPREPLY=($(compgen -W "default min-max abs-max mean-std pow2-floor pow2-ceil
                                     pow2-even pow2-rceil" -- "$cur")); return ;;
        quantize:--granularity | quantize:-g)
            COMPREPLY=($(compgen -W "tensor channel block" -- "$cur")); return ;;
        quantize:--scale-dtype)
            COMPREPLY=($(compgen -W "f32 f16 e8m0" -- "$cur")); return ;;
        bench:--simd-level | bench:-s)
            COMPREPLY=($(compgen -W "scalar sse4-2 avx2 avx-vnni avx512 avx512-bf16 avx512-fp16 avx512-vnni amx neon neon-dotprod" \
                                 -- "$cur")); return ;;
        quantize:--seed | quantize:-s | quantize:--scale | quantize:--zero-point | quantize:-z | \
        quantize:--block-size | quantize:-b | quantize:--axis | quantize:-a | \
        quantize:--threads | quantize:-t | \
        dequantize:--threads | dequantize:-t | \
        demo:--elements | demo:-n | demo:--seed | demo:-s | demo:--threads | demo:-t | \
        bench:--elements | bench:-n | bench:--threads | bench:-t | bench:--repeat | bench:-r | \
        bench:--op | bench:-o)
            # a number or free text: nothing to offer
            return ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_piquant_options "$command")" -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace 2> /dev/null
        return
    fi

    # Positional arguments: count those before the cursor, skipping options
    # and the values of options that take one.
    local n_args=0 word
    for ((i = command_index + 1; i < cword; i++)); do
        word=${words[i]}
        case $word in
            --*=*) ;;
            --no-include-zero | --symmetric | --double-quant | --no-progress | --json | \
            --quiet | -q | \
            --no-overhead | \
            --presets | --help | -h) ;;
            -*) ((i++)) ;;
            *) ((n_args++)) ;;
        esac
    done

    case $command in
        quantize)
            if ((n_args == 0)); then
                _piquant_complete_files
            elif ((n_args == 1)); then
                _piquant_complete_files
            fi ;;
        dequantize)
            if ((n_args == 0)); then
                _piquant_complete_files piqt
            elif ((n_args == 1)); then
                _piquant_complete_files
            fi ;;
        inspect)
            ((n_args == 0)) && _piquant_complete_files ;;
        help)
            ((n_args == 0)) && COMPREPLY=($(compgen -W "$_piquant_commands" -- "$cur")) ;;
    esac
} &&
    complete -F _piquant piquant
