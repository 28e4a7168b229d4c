// Merges groups of named statements into one object: a key in both groups fails to compile,
// where a spread would let one statement silently replace another.

/** `b`, typed never when it has a key of `a`. */
type Disjoint<A, B> = [keyof A & keyof B] extends [never] ? B : never;

export const disjoint = <A extends object, B extends object>(a: A, b: Disjoint<A, B>): A & B => ({ ...a, ...b });
