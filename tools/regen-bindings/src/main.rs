//! Generates the checked-in bindings of prism-gpu: `src/sys/driver.rs` and `src/sys/nvrtc.rs`.
//!
//! bindgen turns `wrapper.h` into types and `extern "C"` declarations; the declarations are then
//! rewritten into a table of optional function pointers, resolved at run time through libloading,
//! whose methods return an error for a symbol the loaded library lacks instead of panicking.
//!
//! Usage: `regen-bindings <crate root> <CUDA include dir>` (scripts/regen passes both).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::path::{Path, PathBuf};

/// One library to bind.
struct Library {
    /// Output file, relative to the crate root.
    output: &'static str,
    /// What the table binds, for the docs.
    what: &'static str,
    /// Name of the generated function table.
    table: &'static str,
    functions: &'static str,
    types: &'static str,
    vars: &'static str,
    /// Newtype enums that get a `name()` method (their constant's name for a value).
    named_enums: &'static [&'static str],
    /// Result type whose free-function wrappers map a missing symbol to an error code.
    free_functions: Option<(&'static str, &'static str, &'static str)>,
}

const LIBRARIES: &[Library] = &[
    Library {
        output: "src/sys/driver.rs",
        what: "the CUDA driver API (cuda.h)",
        table: "DriverFunctions",
        functions: "^cu[A-Z].*",
        types: "^(CU|cu).*",
        vars: "^CU.*",
        // (result type, code when the library is missing, code when the symbol is missing)
        named_enums: &["cudaError_enum"],
        free_functions: Some(("CUresult", "CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_NOT_FOUND")),
    },
    Library {
        output: "src/sys/nvrtc.rs",
        what: "NVRTC (nvrtc.h)",
        table: "NvrtcFunctions",
        functions: "^nvrtc.*",
        types: "^nvrtc.*",
        vars: "^NVRTC.*",
        named_enums: &["nvrtcResult"],
        free_functions: None,
    },
];

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(root), Some(include)) = (args.next(), args.next()) else {
        eprintln!("usage: regen-bindings <crate root> <CUDA include dir>");
        std::process::exit(2);
    };
    let root = PathBuf::from(root);
    for lib in LIBRARIES {
        let code = generate(lib, &root.join("wrapper.h"), Path::new(&include));
        let path = root.join(lib.output);
        std::fs::write(&path, code).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
}

fn generate(lib: &Library, wrapper: &Path, include: &Path) -> String {
    let raw = bindgen::Builder::default()
        .header(wrapper.to_string_lossy())
        .clang_arg(format!("-I{}", include.display()))
        .allowlist_function(lib.functions)
        .allowlist_type(lib.types)
        .allowlist_var(lib.vars)
        // Enums as newtypes with associated constants: an unknown value from a newer library is
        // then an ordinary value, not undefined behaviour.
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: false, is_global: false })
        .prepend_enum_name(false)
        .derive_eq(true)
        .derive_hash(true)
        .derive_default(true)
        .generate_comments(false)
        .layout_tests(false)
        .merge_extern_blocks(true)
        .generate()
        .expect("bindgen failed")
        .to_string();
    let file = syn::parse_file(&raw).expect("bindgen output parses");

    let mut types = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    if let syn::ForeignItem::Fn(f) = foreign {
                        functions.push(f.sig);
                    }
                }
            }
            other => types.push(other),
        }
    }
    functions.sort_by(|a, b| a.ident.cmp(&b.ident));
    let names = lib.named_enums.iter().map(|e| name_method(e, &types));

    let table = Ident::new(lib.table, Span::call_site());
    let fields = functions.iter().map(|sig| {
        let name = &sig.ident;
        let ty = fn_pointer_type(sig);
        quote! { #name: Option<#ty>, }
    });
    let resolves = functions.iter().map(|sig| {
        let name = &sig.ident;
        let symbol = syn::LitByteStr::new(format!("{name}\0").as_bytes(), Span::call_site());
        quote! { #name: resolve(library, #symbol), }
    });
    let methods = functions.iter().map(|sig| {
        let name = &sig.ident;
        let (params, args) = params_and_args(sig);
        let output = return_type(sig);
        let doc = format!(" Calls `{name}`; an error if the loaded library does not export it.");
        quote! {
            #[doc = #doc]
            ///
            /// # Safety
            /// The arguments must satisfy the contract the library documents for this function.
            #[inline]
            pub unsafe fn #name(&self, #(#params),*) -> Result<#output, LoadError> {
                match self.#name {
                    // SAFETY: the pointer was resolved from the library under this symbol name and
                    // has its declared C signature; the caller upholds the function's contract.
                    Some(entry_point) => Ok(unsafe { entry_point(#(#args),*) }),
                    None => Err(LoadError::MissingSymbol(stringify!(#name))),
                }
            }
        }
    });
    let present = functions.iter().map(|sig| {
        let name = &sig.ident;
        quote! { (stringify!(#name), self.#name.is_some()), }
    });
    let count = functions.len();

    let free = lib.free_functions.map(|(result, no_lib, no_symbol)| {
        let result = Ident::new(result, Span::call_site());
        let no_lib = Ident::new(no_lib, Span::call_site());
        let no_symbol = Ident::new(no_symbol, Span::call_site());
        let wrappers = functions.iter().filter(|sig| return_type(sig).to_string() == result.to_string()).map(|sig| {
            let name = &sig.ident;
            let (params, args) = params_and_args(sig);
            let doc = format!(
                " `{name}` through the process-wide driver: `{no_lib}` when no driver could be loaded, `{no_symbol}` when it lacks this function."
            );
            quote! {
                #[doc = #doc]
                ///
                /// # Safety
                /// The arguments must satisfy the contract the CUDA documentation gives for this function.
                #[inline]
                pub unsafe fn #name(#(#params),*) -> #result {
                    match super::loader::driver() {
                        // SAFETY: forwarded unchanged; the caller upholds the function's contract.
                        Ok(loaded_driver) => unsafe { loaded_driver.#name(#(#args),*) }.unwrap_or(#result::#no_symbol),
                        Err(_) => #result::#no_lib,
                    }
                }
            }
        });
        quote! { #(#wrappers)* }
    });

    let body = quote! {
        use super::loader::{resolve, LoadError};

        #(#types)*

        #(#names)*

        /// Entry points of the library, resolved once when it is loaded; `None` where it lacks one.
        pub struct #table {
            #(#fields)*
        }

        impl #table {
            /// Resolves every entry point in `library`; a missing one becomes `None`.
            ///
            /// # Safety
            /// `library` must be the library these declarations describe, so that each symbol has
            /// the declared signature, and it must stay loaded while the table is used.
            pub unsafe fn load(library: &libloading::Library) -> Self {
                // SAFETY: forwarded from this function's contract.
                unsafe {
                    Self { #(#resolves)* }
                }
            }

            /// Every entry point this table knows, with whether the loaded library exports it.
            pub fn entry_points(&self) -> [(&'static str, bool); #count] {
                [#(#present)*]
            }

            #(#methods)*
        }

        #free
    };
    let file: syn::File = syn::parse2(body).expect("generated code parses");
    format!(
        "// @generated by tools/regen-bindings (scripts/regen) from wrapper.h and the CUDA 13.0 headers.\n\
         // Do not edit: change the generator and run scripts/regen.\n\
         //! Generated bindings for {}.\n\
         #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code, missing_docs)]\n\
         #![allow(unpredictable_function_pointer_comparisons)]\n\
         #![allow(clippy::all, clippy::undocumented_unsafe_blocks, unsafe_op_in_unsafe_fn)]\n\n{}",
        lib.what,
        prettyplease::unparse(&file)
    )
}

/// `impl Enum { pub fn name(self) -> Option<&'static str> }` over the enum's associated constants.
fn name_method(enum_name: &str, items: &[syn::Item]) -> TokenStream {
    let consts: Vec<&Ident> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Impl(block) if quote!(#block).to_string().starts_with(&format!("impl {enum_name} ")) => {
                Some(block)
            }
            _ => None,
        })
        .flat_map(|block| &block.items)
        .filter_map(|item| match item {
            syn::ImplItem::Const(c) => Some(&c.ident),
            _ => None,
        })
        .collect();
    assert!(!consts.is_empty(), "no constants found for {enum_name}");
    let ty = Ident::new(enum_name, Span::call_site());
    quote! {
        impl #ty {
            /// The name of this value's constant, or `None` for a value these bindings do not know.
            pub fn name(self) -> Option<&'static str> {
                #(if self == Self::#consts { return Some(stringify!(#consts)); })*
                None
            }
        }
    }
}

fn fn_pointer_type(sig: &syn::Signature) -> TokenStream {
    let inputs = sig.inputs.iter().map(|arg| match arg {
        syn::FnArg::Typed(t) => {
            let ty = &t.ty;
            quote! { #ty }
        }
        syn::FnArg::Receiver(_) => unreachable!("extern functions take no self"),
    });
    let output = return_type(sig);
    quote! { unsafe extern "C" fn(#(#inputs),*) -> #output }
}

fn params_and_args(sig: &syn::Signature) -> (Vec<TokenStream>, Vec<TokenStream>) {
    sig.inputs
        .iter()
        .map(|arg| match arg {
            syn::FnArg::Typed(t) => {
                let (pat, ty) = (&t.pat, &t.ty);
                (quote! { #pat: #ty }, quote! { #pat })
            }
            syn::FnArg::Receiver(_) => unreachable!("extern functions take no self"),
        })
        .unzip()
}

fn return_type(sig: &syn::Signature) -> TokenStream {
    match &sig.output {
        syn::ReturnType::Default => quote! { () },
        syn::ReturnType::Type(_, ty) => quote! { #ty },
    }
}
