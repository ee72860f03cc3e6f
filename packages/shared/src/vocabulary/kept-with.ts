/**
 * State one keeper (a service's book) keeps with objects it does not own, such as agents, on the object itself: it lives
 * exactly as long as the object. Not a `WeakMap<Agent, …>` keyed by the object: V8's young-generation collector holds an old
 * `WeakMap`'s values strongly (and a `WeakRef`'s target), so a value that names its key (a parent's book names the parent)
 * kept the key, and all it names, through every young collection until a full one (bench/README, "What a background
 * delegation kept"). An object that does not declare the bag gets it as a hidden property (not in its keys or JSON); one
 * that cannot take it (frozen, or with a `keptWith` of its own that is no object) keeps its state in a `WeakMap` after all.
 */
export class KeptWith<T> {
  private readonly key: symbol
  private fallback?: WeakMap<object, T>

  constructor(name: string) {
    this.key = Symbol(name)
  }

  get(owner: object): T | undefined {
    // One read: a bag that is no object (someone's own `keptWith`) reads undefined, and its owner's state is in the fallback.
    const kept = (owner as Keeper).keptWith?.[this.key] as T | undefined
    return kept !== undefined ? kept : this.fallback?.get(owner)
  }

  set(owner: object, value: T): T {
    const keeper = owner as Keeper
    if (keeper.keptWith === undefined) {
      // An object that declares the bag (an agent) gets it by a plain write; any other gets it hidden from its keys and JSON.
      if (Object.hasOwn(owner, 'keptWith')) keeper.keptWith = {}
      else Reflect.defineProperty(owner, 'keptWith', { value: {}, writable: true, configurable: true })
    }
    const bag = keeper.keptWith
    if (bag && typeof bag === 'object' && Object.isExtensible(bag)) bag[this.key] = value
    else (this.fallback ??= new WeakMap()).set(owner, value)
    return value
  }

  /** Forgets the value kept with `owner` (its bag keeps the key, undefined: deleting a key would slow every read of the bag). */
  delete(owner: object): void {
    const bag = (owner as Keeper).keptWith
    if (typeof bag === 'object' && bag !== null && this.key in bag) bag[this.key] = undefined
    this.fallback?.delete(owner)
  }
}

/** An object that lets others keep state with it declares the bag (an agent does: `keptWith`), so taking one changes no shape. */
interface Keeper { keptWith?: Record<symbol, unknown> }
