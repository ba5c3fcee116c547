// The sync engine's resource tables come from the one catalogue (src/catalog/); re-exported for its readers.
export { childCollections, composition, orderLineItems, otherResources, resourceName, resources } from '../catalog/index.ts';
export type { ChildSpec, ResourceSpec } from '../catalog/index.ts';
